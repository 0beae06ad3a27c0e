"""Reference safetensors files written from PyTorch, for tests/io.

Writes into tests/data/io/:
  torch_net.safetensors       the state_dict of Net (below): f32 weights, BatchNorm running
                              statistics and its int64 num_batches_tracked
  torch_net_f16.safetensors   the same model after .half()  (int64 buffers stay int64)
  torch_net_bf16.safetensors  the same model after .bfloat16()
  torch_dtypes.safetensors    one tensor per dtype (F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL),
                              edge values included, plus a 0-d and an empty tensor
  torch_reference.json        every tensor's values as PyTorch reads them, and Net's outputs
                              (eval mode) on fixed inputs

The `safetensors` package is not in Debian, so `serialize` below is a hand implementation of
safetensors' serialize (safetensors/src/tensor.rs), following its layout rules exactly:
  - 8-byte little-endian header length N, then N bytes of JSON, then the data;
  - the JSON is compact (no spaces), "__metadata__" first, then the tensors in data order, each
    {"dtype", "shape", "data_offsets"} with offsets relative to the data's start;
  - the JSON is padded with spaces to a multiple of 8 bytes;
  - tensors are sorted by dtype descending in safetensors' Dtype order (BOOL < U8 < I8 <
    F8_E5M2 < F8_E4M3 < I16 < U16 < F16 < BF16 < I32 < U32 < F32 < F64 < I64 < U64), then by
    name, and laid out back to back.
safetensors.torch.save_file(model.state_dict(), path, metadata={"format": "pt"}) writes the same
bytes.

Run with a Python that has torch:  python3 tests/data/gen_io_torch.py
"""
import json
import math
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "io")

DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
               "I64", "U64"]
TORCH_DTYPES = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16", torch.float16: "F16",
    torch.bfloat16: "BF16", torch.int32: "I32", torch.float32: "F32", torch.float64: "F64", torch.int64: "I64",
}


def tensor_bytes(t):
    t = t.detach().contiguous().reshape(-1)
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy().tobytes()
    return t.view(torch.uint8).numpy().tobytes()


def serialize(tensors, metadata=None):
    items = sorted(tensors.items(), key=lambda kv: (-DTYPE_ORDER.index(TORCH_DTYPES[kv[1].dtype]), kv[0].encode()))
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    blobs, offset = [], 0
    for name, t in items:
        data = tensor_bytes(t)
        header[name] = {"dtype": TORCH_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write(name, tensors, metadata=None):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(serialize(tensors, metadata))


def number(x):
    if isinstance(x, bool):
        return x
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def values(t):
    t = t.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return [number(v) for v in t.reshape(-1).tolist()]


def describe(tensors):
    return {name: {"dtype": TORCH_DTYPES[t.dtype], "shape": list(t.shape), "values": values(t)}
            for name, t in tensors.items()}


class Net(torch.nn.Module):
    # The kiln twin (tests/io/torch_net.h) declares the same fields in the same order.
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)
        self.bn = torch.nn.BatchNorm1d(4)
        self.fc = torch.nn.Linear(5, 4)
        self.head = torch.nn.Sequential(torch.nn.Linear(4, 2))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(30)
    net = Net()
    net.train()
    for _ in range(3):  # running statistics away from their initial values; num_batches_tracked = 3
        net.bn(torch.randn(8, 4) * 2.0 + 1.0)
    net.eval()
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    write("torch_net.safetensors", state, {"format": "pt"})
    half = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
    write("torch_net_f16.safetensors", half, {"format": "pt"})
    bhalf = {k: v.bfloat16() if v.is_floating_point() else v for k, v in state.items()}
    write("torch_net_bf16.safetensors", bhalf, {"format": "pt"})

    dtypes = {
        "f64": torch.tensor([0.1, -2.5, 1e300, 3.0], dtype=torch.float64),
        "f32": torch.tensor([[0.1, -1.5], [float("inf"), 3.4e38]], dtype=torch.float32),
        "f16": torch.tensor([0.1, -65504.0, 6e-8, float("-inf")], dtype=torch.float16),
        "bf16": torch.tensor([0.1, -3.0e38, 1e-39, 7.0], dtype=torch.bfloat16),
        "i64": torch.tensor([-2**63, 2**63 - 1, 0, -1], dtype=torch.int64),
        "i32": torch.tensor([-2**31, 2**31 - 1, 7], dtype=torch.int32),
        "i16": torch.tensor([-32768, 32767], dtype=torch.int16),
        "i8": torch.tensor([[-128, 127], [0, -1]], dtype=torch.int8),
        "u8": torch.tensor([0, 255, 128], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True], dtype=torch.bool),
        "scalar": torch.tensor(2.5, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
    }
    write("torch_dtypes.safetensors", dtypes, {"written_by": "gen_io_torch.py"})

    torch.manual_seed(31)
    x_conv, x_bn, x_fc, x_head = torch.randn(1, 2, 5, 5), torch.randn(3, 4), torch.randn(2, 5), torch.randn(2, 4)
    with torch.no_grad():
        forward = {
            "conv": {"input": describe({"x": x_conv})["x"], "output": describe({"y": net.conv(x_conv)})["y"]},
            "bn": {"input": describe({"x": x_bn})["x"], "output": describe({"y": net.bn(x_bn)})["y"]},
            "fc": {"input": describe({"x": x_fc})["x"], "output": describe({"y": net.fc(x_fc)})["y"]},
            "head": {"input": describe({"x": x_head})["x"], "output": describe({"y": net.head(x_head)})["y"]},
        }
    reference = {
        "net": {"state_dict_order": list(state.keys()), "tensors": describe(state)},
        "net_f16": {"tensors": describe(half)},
        "net_bf16": {"tensors": describe(bhalf)},
        "dtypes": {"tensors": describe(dtypes)},
        # What each dtype reads as in f32 / i64 (torch's own conversions): the conversion oracle.
        "dtypes_as_f32": {k: values(v.float()) for k, v in dtypes.items() if v.is_floating_point()},
        "dtypes_as_i64": {k: values(v.long()) for k, v in dtypes.items()
                          if not v.is_floating_point() and v.dtype != torch.bool},
        "forward": forward,
    }
    with open(os.path.join(OUT, "torch_reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
