"""Malformed safetensors files, for tests/io and the fuzz target's seed corpus.

Writes tests/data/io/malformed/<case>.safetensors and tests/data/io/malformed.json, which maps
each file to the fragments its kiln::Error must contain: the file's name, the tensor's name
where the problem has one, and the words that say what is wrong. Also writes
tests/data/io/valid.safetensors, a small well-formed file (the fuzzer's starting point).

Each case breaks one rule of the format (see io/safetensors_header.h): the length prefix, the
JSON, an entry's fields, the byte count against the shape, or the layout of the data.

Run with any python3:  python3 tests/data/gen_io_malformed.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "io", "malformed")


def with_length(text, data=b"", length=None):
    """A file from header text (str or bytes) and data; `length` overrides the length prefix."""
    if isinstance(text, str):
        text = text.encode()
    n = len(text) if length is None else length
    return struct.pack("<Q", n) + text + data


def header(entries, data, metadata=None):
    obj = {}
    if metadata is not None:
        obj["__metadata__"] = metadata
    obj.update(entries)
    text = json.dumps(obj, separators=(",", ":"))
    text += " " * ((8 - len(text) % 8) % 8)
    return with_length(text, data)


def f32(shape, begin, end):
    return {"dtype": "F32", "shape": shape, "data_offsets": [begin, end]}


W8 = {"w": f32([2], 0, 8)}
CASES = {}


def case(name, content, *fragments):
    CASES[name + ".safetensors"] = (content, [name + ".safetensors", *fragments])


# The length prefix.
case("empty", b"", "the file is 0 bytes")
case("short_length", b"\x10\x00\x00", "the file is 3 bytes")
case("header_past_end", with_length("{}", length=1000), "header length 1000 runs past the end of the file")
case("header_too_large", with_length("{}", length=200_000_000), "exceeds the limit of 100000000 bytes")
case("header_length_max", with_length("{}", length=2**64 - 1), "header length 18446744073709551615 exceeds")
case("header_length_zero", with_length("", b"\0" * 8), "not valid JSON")
case("truncated_header", with_length('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}')[:30],
     "runs past the end of the file")

# The JSON.
case("json_truncated", with_length('{"w": {"dtype": "F32"'), "not valid JSON")
case("json_garbage", with_length("hello, world"), "not valid JSON")
case("json_trailing", with_length("{} {}"), "not valid JSON")
case("json_nul_padding", with_length(b"{}\0\0\0\0\0\0"), "not valid JSON")
case("header_not_object", with_length("[1, 2, 3]"), "the header is not a JSON object")
case("header_string", with_length('"weights"'), "the header is not a JSON object")
case("invalid_utf8_name", with_length(b'{"w\xff":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}'),
     "not valid JSON")
case("deep_nesting", with_length("[" * 20000 + "]" * 20000), "the header is not a JSON object")
case("deep_nesting_in_shape", with_length('{"w":{"shape":' + "[" * 10000 + "]" * 10000 + "}}"),
     "'w'", "shape must hold only integers")

# Entries.
case("entry_not_object", header({"w": 5}, b""), "'w'", "its entry must be an object")
case("entry_array", header({"w": [1, 2]}, b""), "'w'", "its entry must be an object")
case("missing_dtype", header({"w": {"shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8), "'w'", "lacks dtype")
case("missing_shape", header({"w": {"dtype": "F32", "data_offsets": [0, 8]}}, b"\0" * 8), "'w'", "lacks shape")
case("missing_offsets", header({"w": {"dtype": "F32", "shape": [2]}}, b"\0" * 8), "'w'", "lacks data_offsets")
case("unknown_dtype", header({"w": {"dtype": "F128", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
     "'w'", "unknown dtype 'F128'")
case("dtype_lowercase", header({"w": {"dtype": "f32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
     "'w'", "unknown dtype 'f32'")
case("dtype_not_string", header({"w": {"dtype": 4, "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
     "'w'", "dtype must be a string")
case("unknown_field", header({"w": dict(f32([2], 0, 8), extra=1)}, b"\0" * 8), "'w'", "unknown field 'extra'")
case("duplicate_field",
     with_length('{"w":{"dtype":"F32","dtype":"I64","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8),
     "'w'", "the field 'dtype' appears twice")
case("duplicate_name",
     with_length('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                 '"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}', b"\0" * 16),
     "the name 'w' appears twice")
case("shape_not_array", header({"w": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}}, b"\0" * 8),
     "'w'", "shape must be an array")
case("shape_string_dim", header({"w": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}}, b"\0" * 8),
     "'w'", "shape must hold only integers")
case("shape_negative", header({"w": f32([-2], 0, 8)}, b"\0" * 8), "'w'", "negative dimension -2")
case("shape_fraction", header({"w": f32([2.5], 0, 10)}, b"\0" * 10), "'w'", "shape holds '2.5'")
case("shape_too_many_dims", header({"w": f32([1] * 65, 0, 4)}, b"\0" * 4), "'w'", "more than 64 dimensions")
case("shape_dim_beyond_u64", with_length('{"w":{"dtype":"F32","shape":[100000000000000000000],'
                                         '"data_offsets":[0,8]}}', b"\0" * 8),
     "'w'", "shape holds '100000000000000000000'")
case("shape_dim_beyond_i64", header({"w": f32([2**63], 0, 8)}, b"\0" * 8),
     "'w'", "does not fit in 64-bit signed")
case("offsets_one_number", header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8]}}, b"\0" * 8),
     "'w'", "data_offsets must hold two numbers")
case("offsets_three_numbers", header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8, 8]}}, b"\0" * 8),
     "'w'", "data_offsets has more than two numbers")
case("offsets_negative", header({"w": f32([2], -8, 0)}, b"\0" * 8), "'w'", "negative offset -8")
case("offsets_not_array", header({"w": {"dtype": "F32", "shape": [2], "data_offsets": 0}}, b"\0" * 8),
     "'w'", "data_offsets must be an array")

# Byte counts against shapes.
case("offsets_backwards", header({"w": f32([0], 8, 0)}, b"\0" * 8), "'w'", "run backwards")
case("byte_count_mismatch", header({"w": f32([3], 0, 8)}, b"\0" * 8),
     "'w'", "shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] span 8")
case("dtype_size_mismatch", header({"w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
     "'w'", "of F64 needs 16 bytes")
case("element_count_overflow", header({"w": f32([2**32, 2**32], 0, 8)}, b"\0" * 8), "'w'", "overflows")
case("byte_count_overflow", header({"w": f32([2**62], 0, 8)}, b"\0" * 8), "'w'", "overflows")
case("overflow_beside_zero", header({"w": f32([0, 2**40, 2**40], 0, 0)}, b""), "'w'", "overflows")

# The layout of the data.
case("offsets_past_end", header({"w": f32([4], 0, 16)}, b"\0" * 8), "'w'", "run past the end of the data")
case("huge_offsets", header({"w": f32([2], 2**64 - 16, 2**64 - 8)}, b"\0" * 8), "'w'", "run past the end of the data")
case("truncated_data", header({"a": f32([2], 0, 8), "b": f32([4], 8, 24)}, b"\0" * 24)[:-10],
     "'b'", "run past the end of the data")
case("overlap", header({"a": f32([2], 0, 8), "b": f32([2], 4, 12)}, b"\0" * 12),
     "'b'", "overlaps tensor 'a'")
case("same_offsets", header({"a": f32([2], 0, 8), "b": f32([2], 0, 8)}, b"\0" * 8), "'b'", "overlaps tensor 'a'")
case("gap", header({"a": f32([2], 0, 8), "b": f32([2], 12, 20)}, b"\0" * 20), "'b'", "a gap of 4 bytes")
case("not_from_zero", header({"w": f32([2], 4, 12)}, b"\0" * 12), "'w'", "a gap of 4 bytes")
case("trailing_bytes", header({"w": f32([2], 0, 8)}, b"\0" * 16), "'w'", "8 bytes after the last tensor")
case("no_tensors_but_data", header({}, b"\0" * 8), "8 bytes after the last tensor")

# Metadata.
case("metadata_not_object", header(W8, b"\0" * 8, metadata=[1]), "__metadata__ must be an object of strings")
case("metadata_number", header(W8, b"\0" * 8, metadata={"step": 3}),
     "__metadata__ value of 'step' must be a string")
case("metadata_nested", header(W8, b"\0" * 8, metadata={"a": {"b": "c"}}),
     "__metadata__ value of 'a' must be a string")


def main():
    os.makedirs(OUT, exist_ok=True)
    for stale in os.listdir(OUT):
        if stale.endswith(".safetensors"):
            os.remove(os.path.join(OUT, stale))
    for name, (content, _) in CASES.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(content)
    with open(os.path.join(HERE, "io", "malformed.json"), "w") as f:
        json.dump({name: fragments for name, (_, fragments) in CASES.items()}, f, indent=1, sort_keys=True)
        f.write("\n")
    valid = header({"a": f32([2], 0, 8), "b": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]}},
                   struct.pack("<ffq", 1.0, -2.0, 7), metadata={"format": "pt"})
    with open(os.path.join(HERE, "io", "valid.safetensors"), "wb") as f:
        f.write(valid)


if __name__ == "__main__":
    main()
