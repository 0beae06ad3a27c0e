"""Shared helpers for the reference-data generators (tests/data/gen_<family>.py).

Run a generator with a Python that has PyTorch (Debian's python3-torch: /usr/bin/python3):
    /usr/bin/python3 tests/data/gen_elementwise.py
It writes tests/data/<family>.json, which is committed so that CI needs no PyTorch.
The layout is documented in tests/support/reference.h.
"""
import json
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {torch.float32: "f32", torch.int64: "i64", torch.bool: "bool", torch.float16: "f16", torch.bfloat16: "bf16"}


def _value(x, dtype):
    if dtype == "bool":
        return bool(x)
    if dtype == "i64":
        return int(x)
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def tensor_json(t):
    t = t.detach().contiguous()
    dtype = DTYPES[t.dtype]
    return {"shape": list(t.shape), "dtype": dtype,
            "data": [_value(x, dtype) for x in t.reshape(-1).tolist()]}


def case(name, op, inputs, outputs, attrs=None):
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return {"name": name, "op": op, "attrs": attrs or {},
            "inputs": [tensor_json(t) for t in inputs],
            "outputs": [tensor_json(t) for t in outputs]}


def write(family, cases):
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    path = os.path.join(HERE, family + ".json")
    with open(path, "w") as f:
        json.dump({"generator": "gen_%s.py" % family, "torch": torch.__version__, "cases": cases}, f,
                  separators=(",", ":"))
    print("wrote %d cases to %s" % (len(cases), path))
