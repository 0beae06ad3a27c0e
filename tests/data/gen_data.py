"""Reference files and values for data/ (tests/datasets/).

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_data.py

Writes under tests/data/datasets/:
  idx/           small IDX files, plain and gzipped, one per type code, with their values in
                 idx.json ({"file": {"type", "dims", "values"}})
  idx_bad/       malformed IDX files; idx_bad.json maps each to the fragments its kiln::Error
                 must hold (the file's name first). mnist_bad.json: image/label pairs that
                 mnist_dataset must refuse (counts that disagree, a file of the wrong kind).
  csv/           small CSV files with the options to read them and the values Python's csv
                 module reads (csv.json)
  csv_bad/       malformed CSV files; csv_bad.json gives each one's options and fragments
  refs.json      what PyTorch 1.13 computes where kiln must agree: torchvision's Normalize
                 ((x - mean[c]) / std[c]), RandomCrop's geometry (F.pad then a slice at a given
                 corner), horizontal flip (flip(-1)), F.one_hot, random_split's sizes from
                 fractions, DataLoader's batch counts and last batch size with drop_last
  fashion_mnist.json
                 labels and pixels of Debian's Fashion-MNIST files, read with gzip + struct
                 (/usr/share/datasets/fashion-mnist, package dataset-fashion-mnist)
"""
import csv
import gzip
import io
import json
import math
import os
import shutil
import struct

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "datasets")
FASHION = "/usr/share/datasets/fashion-mnist"

TYPES = {"u8": (0x08, ">u1"), "i8": (0x09, ">i1"), "i16": (0x0B, ">i2"), "i32": (0x0C, ">i4"),
         "f32": (0x0D, ">f4"), "f64": (0x0E, ">f8")}


def gz(data):
    return gzip.compress(data, mtime=0)


def idx_bytes(array, type_name):
    code, dtype = TYPES[type_name]
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    return header + np.asarray(array, dtype=dtype).tobytes()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_json(name, obj):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


# --- valid IDX files --------------------------------------------------------------------------

def valid_idx():
    rng = np.random.default_rng(31)
    files = {}
    images = rng.integers(0, 256, size=(5, 4, 3), dtype=np.uint8)
    labels = np.array([3, 0, 9, 1, 7], dtype=np.uint8)
    arrays = {
        "images-idx3-ubyte": (images, "u8"),
        "labels-idx1-ubyte": (labels, "u8"),
        "i8.idx": (np.array([[-128, -1, 0], [1, 64, 127]], dtype=np.int8), "i8"),
        "i16.idx": (np.array([[-32768, -2, 300], [4096, 7, 32767]], dtype=np.int16), "i16"),
        "i32.idx": (np.array([[-2147483648, -5, 70000], [16777217, 9, 2147483647]], dtype=np.int32), "i32"),
        "f32.idx": (np.array([[0.5, -1.25, 3.0e-3], [1.0e6, -0.0, 7.75]], dtype=np.float32), "f32"),
        "f64.idx": (np.array([[0.1, -2.5, 1.0e-3], [12345.678, -0.0, 3.0]], dtype=np.float64), "f64"),
        "empty.idx": (np.zeros((0, 2), dtype=np.uint8), "u8"),
    }
    for name, (array, type_name) in arrays.items():
        data = idx_bytes(array, type_name)
        for suffix, content in (("", data), (".gz", gz(data))):
            write(os.path.join(OUT, "idx", name + suffix), content)
            files[name + suffix] = {"type": type_name, "dims": list(array.shape),
                                    "values": [float(v) for v in array.reshape(-1)]}
    write_json("idx.json", files)


# --- malformed IDX files ----------------------------------------------------------------------

def malformed_idx():
    cases = {}

    def case(name, content, *fragments):
        write(os.path.join(OUT, "idx_bad", name), content)
        cases[name] = [name, *fragments]

    good = idx_bytes(np.arange(60, dtype=np.uint8).reshape(5, 4, 3), "u8")  # 16-byte header + 60
    case("empty.idx", b"", "truncated header: expected 4 bytes, got 0")
    case("short_magic.idx", b"\x00\x00", "truncated header: expected 4 bytes, got 2")
    case("png.idx", b"\x89PNG\r\n\x1a\n" + b"\0" * 16, "wrong magic 0x89504E47")
    case("nonzero_first_bytes.idx", b"\x00\x01\x08\x01" + b"\0" * 8, "wrong magic 0x00010801")
    case("unknown_type.idx", b"\x00\x00\x0a\x01\x00\x00\x00\x01\x00", "unknown type code 0x0A")
    case("zero_dims.idx", b"\x00\x00\x08\x00", "0 dimensions")
    case("too_many_dims.idx", b"\x00\x00\x08\x09" + b"\x00\x00\x00\x01" * 9 + b"\x00", "9 dimensions")
    case("truncated_dims.idx", good[:8], "truncated header: expected 16 bytes, got 8")
    case("truncated_data.idx", good[:-1], "truncated data: expected 60 bytes, got 59")
    case("extra_data.idx", good + b"\x00\x00", "2 extra bytes after the 60 bytes")
    case("dims_overflow.idx", b"\x00\x00\x0e\x08" + b"\xff\xff\xff\xff" * 8, "overflow")
    case("f64_count_mismatch.idx", idx_bytes(np.zeros((2, 3)), "f64")[:-4],
         "truncated data: expected 48 bytes, got 44")
    case("truncated_data.idx.gz", gz(good[:-1]), "truncated data: expected 60 bytes, got 59")
    case("truncated_header.idx.gz", gz(good[:10]), "truncated header: expected 16 bytes, got 10")
    case("extra_data.idx.gz", gz(good + b"\x01"), "the gzip data goes on after the 60 bytes")
    compressed = gz(good)
    case("cut_stream.idx.gz", compressed[:len(compressed) // 2], "corrupt gzip data (unexpected end of file)")
    case("garbage_after_magic.idx.gz", b"\x1f\x8b" + bytes(range(3, 40)), "corrupt gzip data")
    bad_crc = bytearray(compressed)
    bad_crc[-8] ^= 0xFF  # the CRC32 in the trailer
    case("bad_crc.idx.gz", bytes(bad_crc), "corrupt gzip data (incorrect data check)")
    # 1e10 bytes promised by a 40-byte file: refused before any allocation.
    case("gz_too_large.idx.gz", gz(b"\x00\x00\x08\x02" + struct.pack(">II", 100000, 100000)),
         "more than a gzip file of")
    write_json("idx_bad.json", cases)

    # mnist_dataset's own checks: pairs of files that each read, but not together.
    pairs = {}
    images5 = idx_bytes(np.zeros((5, 4, 3), dtype=np.uint8), "u8")
    labels4 = idx_bytes(np.zeros(4, dtype=np.uint8), "u8")
    write(os.path.join(OUT, "mnist_bad", "images5-idx3-ubyte"), images5)
    write(os.path.join(OUT, "mnist_bad", "labels4-idx1-ubyte.gz"), gz(labels4))
    write(os.path.join(OUT, "mnist_bad", "labels2d-idx2-ubyte"), idx_bytes(np.zeros((5, 1), dtype=np.uint8), "u8"))
    write(os.path.join(OUT, "mnist_bad", "images_f32-idx3"), idx_bytes(np.zeros((5, 4, 3), dtype=np.float32), "f32"))
    pairs["counts_disagree"] = {"images": "images5-idx3-ubyte", "labels": "labels4-idx1-ubyte.gz",
                                "fragments": ["counts disagree: 5 images in", "images5-idx3-ubyte",
                                              "but 4 labels in", "labels4-idx1-ubyte.gz"]}
    pairs["labels_not_1d"] = {"images": "images5-idx3-ubyte", "labels": "labels2d-idx2-ubyte",
                              "fragments": ["labels2d-idx2-ubyte", "expected u8 labels [n] (magic 0x00000801)",
                                            "got 2 dimensions"]}
    pairs["labels_as_images"] = {"images": "images5-idx3-ubyte", "labels": "images5-idx3-ubyte",
                                 "fragments": ["expected u8 labels [n]", "got 3 dimensions of u8"]}
    pairs["images_not_u8"] = {"images": "images_f32-idx3", "labels": "labels4-idx1-ubyte.gz",
                              "fragments": ["images_f32-idx3", "expected u8 images [n, rows, cols]",
                                            "of f32"]}
    pairs["bad_images_file"] = {"images": "../idx_bad/truncated_data.idx", "labels": "labels4-idx1-ubyte.gz",
                                "fragments": ["truncated_data.idx", "truncated data: expected 60 bytes, got 59"]}
    labels_200 = np.zeros(5, dtype=np.uint8)
    labels_200[3] = 200  # Fashion-MNIST has 10 classes
    write(os.path.join(OUT, "mnist_bad", "labels_200-idx1-ubyte"), idx_bytes(labels_200, "u8"))
    pairs["label_outside_classes"] = {"images": "images5-idx3-ubyte", "labels": "labels_200-idx1-ubyte",
                                      "fragments": ["labels_200-idx1-ubyte", "label 200 of record 3",
                                                    "is not one of the 10 classes (0 to 9)"]}
    write_json("mnist_bad.json", pairs)


# --- CSV files --------------------------------------------------------------------------------

def csv_files():
    files = {}

    def valid(name, text, options, label="class"):
        """`options` are CsvOptions' fields; values are read back by Python's csv module."""
        write(os.path.join(OUT, "csv", name), text.encode())
        delimiter = options.get("delimiter", ",")
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        rows = [r for r in reader if r]
        header = rows.pop(0) if options.get("header", True) else None
        if "label_column" in options:
            label_at = header.index(options["label_column"])
        else:
            label_at = options.get("label_index")
        features, labels, targets = [], [], []
        for row in rows:
            for i, field in enumerate(row):
                if i == label_at:
                    if label == "value":
                        targets.append(float(np.float32(float(field))))
                    elif "class_names" in options:
                        labels.append(options["class_names"].index(field.strip()))
                    else:
                        labels.append(int(field))
                else:
                    features.append(float(np.float32(float(field))))
        names = [h for i, h in enumerate(header) if i != label_at] if header else []
        files[name] = {"options": options, "label_kind": label, "feature_names": names, "rows": len(rows),
                       "features": features, "labels": labels, "targets": targets}

    valid("iris_small.csv",
          'sepal length,"sepal ""width""",petal_length,species\r\n'
          '5.1,3.5,1.4,setosa\r\n'
          '\r\n'
          ' 7.0 ,"3.2",4.7,"versicolor"\r\n'
          '6.3,+3.3,6.0, virginica\r\n',
          {"label_column": "species", "class_names": ["setosa", "versicolor", "virginica"]})
    valid("no_header.tsv", "1\t0.5\t-2\n0\t1e-3\t4.25\n2\t-7\t8\n",
          {"delimiter": "\t", "header": False, "label_index": 0})
    valid("regression.csv", "x1,x2,y\n1,2,3.5\n4,5,-6.25\n7,8,9\n", {"label_column": "y"}, label="value")
    valid("quoted_newline.csv", 'a,b,label\n"1","2",0\n"3\n",4,1\n5,6,2', {"label_index": 2})
    valid("no_label.csv", "a;b\n1;2\n3;4\n", {"delimiter": ";"})
    valid("header_only.csv", "a,b,label\n", {"label_column": "label"})
    write_json("csv.json", files)

    bad = {}

    def malformed(name, text, options, *fragments):
        write(os.path.join(OUT, "csv_bad", name), text.encode())
        bad[name] = {"options": options, "fragments": [name, *fragments]}

    malformed("bad_number.csv", "a,b,label\n1,2,0\n3,abc,1\n", {"label_column": "label"},
              ":3: field 2 (\"b\"): 'abc' is not a number")
    malformed("ragged_short.csv", "a,b,label\n1,2,0\n3,1\n", {"label_column": "label"},
              ":3: 2 fields, expected 3 (as on line 1)")
    malformed("ragged_long.csv", "1,2\n3,4\n5,6,7\n", {"header": False},
              ":3: 3 fields, expected 2 (as on line 1)")
    malformed("unclosed_quote.csv", 'a,b\n1,2\n"3,4\n5,6\n', {},
              ":3: field 1 opens a quote that never closes")
    malformed("after_quote.csv", 'a,b\n"1"x,2\n', {}, ":2: field 1 has 'x' after its closing quote")
    malformed("empty_field.csv", "a,b\n1,\n", {}, ":2: field 2 (\"b\"): empty, expected a number")
    malformed("bad_class.csv", "a,label\n1,2.5\n", {"label_column": "label"},
              ":2: field 2 (\"label\"): '2.5' is not a class index")
    malformed("negative_class.csv", "a,label\n1,-1\n", {"label_column": "label"}, "'-1' is not a class index")
    malformed("unknown_class.csv", "a,label\n1,cat\n", {"label_column": "label", "class_names": ["dog", "bird"]},
              "'cat' is not one of the class names [dog, bird]")
    malformed("empty.csv", "", {}, "empty, expected a header row")
    malformed("no_such_column.csv", "a,b\n1,2\n", {"label_column": "label"}, 'no column named "label"')
    malformed("label_index_range.csv", "1,2\n", {"header": False, "label_index": 2},
              "label index 2 is out of range for rows of 2 fields")
    malformed("f32_overflow.csv", "a\n1e999\n", {}, "'1e999' is out of the range of f32")
    write_json("csv_bad.json", bad)


# --- values where kiln must agree with PyTorch ------------------------------------------------

def torch_refs():
    torch.manual_seed(5)
    refs = {}
    image = torch.rand(3, 4, 5)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    # torchvision.transforms.functional.normalize on a tensor:
    normalized = image.sub(torch.tensor(mean)[:, None, None]).div(torch.tensor(std)[:, None, None])
    refs["normalize"] = {"input": image.reshape(-1).tolist(), "shape": [3, 4, 5], "mean": mean, "std": std,
                         "output": normalized.reshape(-1).tolist()}

    # torchvision RandomCrop(size, padding): F.pad with zeros (or `fill`), then the window at a
    # corner drawn uniformly from [0, H + 2p - h] x [0, W + 2p - w].
    crop_image = torch.rand(2, 5, 6)
    crops = []
    for (h, w, p, fill, top, left) in [(4, 5, 2, 0.0, 0, 0), (4, 5, 2, 0.0, 5, 5), (4, 5, 2, 0.5, 3, 1),
                                       (5, 6, 0, 0.0, 0, 0), (3, 3, 1, -1.0, 2, 4), (9, 10, 2, 0.25, 0, 0)]:
        padded = F.pad(crop_image, (p, p, p, p), value=fill)
        out = padded[:, top:top + h, left:left + w]
        crops.append({"size": [h, w], "padding": p, "fill": fill, "top": top, "left": left,
                      "shape": list(out.shape), "output": out.reshape(-1).tolist()})
    refs["crop"] = {"input": crop_image.reshape(-1).tolist(), "shape": [2, 5, 6], "cases": crops}

    refs["flip"] = {"input": crop_image.reshape(-1).tolist(), "shape": [2, 5, 6],
                    "output": crop_image.flip(-1).reshape(-1).tolist()}

    labels = torch.tensor([0, 3, 9, 4, 4])
    refs["one_hot"] = {"labels": labels.tolist(), "num_classes": 10,
                       "output": F.one_hot(labels, 10).float().reshape(-1).tolist()}

    splits = []
    for n, lengths in [(10, [0.5, 0.5]), (10, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]), (11, [0.25, 0.25, 0.25, 0.25]),
                       (5, [0.1, 0.2, 0.7]), (100, [0.8, 0.1, 0.1]), (3, [1.0]), (10, [3, 7]), (0, [0.5, 0.5]),
                       (13, [0.333, 0.333, 0.334])]:
        parts = torch.utils.data.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
        splits.append({"n": n, "lengths": lengths, "sizes": [len(p) for p in parts]})
    refs["random_split"] = splits

    batches = []
    for n, batch_size in [(10, 3), (9, 3), (1, 4), (0, 2), (100, 7), (5, 5)]:
        for drop_last in (False, True):
            loader = torch.utils.data.DataLoader(range(n), batch_size=batch_size, drop_last=drop_last)
            sizes = [len(b) for b in loader]
            batches.append({"n": n, "batch_size": batch_size, "drop_last": drop_last, "batches": len(loader),
                            "last_size": sizes[-1] if sizes else 0})
    refs["batch_counts"] = batches
    write_json("refs.json", refs)


# --- Debian's Fashion-MNIST -------------------------------------------------------------------

def read_idx_gz(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = list(struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim]))
    return magic, dims, data[4 + 4 * ndim:]


def fashion_mnist():
    out = {}
    for split in ("train", "t10k"):
        magic_i, dims_i, pixels = read_idx_gz(os.path.join(FASHION, split + "-images-idx3-ubyte.gz"))
        magic_l, dims_l, labels = read_idx_gz(os.path.join(FASHION, split + "-labels-idx1-ubyte.gz"))
        rows, cols = dims_i[1], dims_i[2]
        picks = [(0, 14, 14), (0, 27, 27), (1, 5, 20), (1, 10, 3), (dims_i[0] - 1, 13, 9), (42, 20, 15)]
        out[split] = {
            "image_magic": magic_i, "label_magic": magic_l, "image_dims": dims_i, "label_dims": dims_l,
            "first_labels": list(labels[:20]), "last_label": labels[-1],
            "label_counts": [labels.count(c) for c in range(10)],
            "pixels": [{"image": i, "row": r, "col": c, "value": pixels[i * rows * cols + r * cols + c]}
                       for (i, r, c) in picks],
            "image0_sum": sum(pixels[:rows * cols]),
        }
    write_json("fashion_mnist.json", out)


if __name__ == "__main__":
    for sub in ("idx", "idx_bad", "mnist_bad", "csv", "csv_bad"):
        shutil.rmtree(os.path.join(OUT, sub), ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    valid_idx()
    malformed_idx()
    csv_files()
    torch_refs()
    fashion_mnist()
