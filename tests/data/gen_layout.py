"""Reference data for the layout family (tests/ops/test_layout.cpp).

Each case names a kiln op and its attrs; the "chain" cases hold a list of steps, each an op
applied to earlier values (the case inputs, then every step's outputs in order), and torch runs
the same steps on its own strided views, so chains check kiln's copies against torch's views.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math

import torch
import torch.nn.functional as F

from refgen import case, write

torch.manual_seed(0)


def f32(*shape):
    return torch.randn(shape)


def i64(*shape):
    return torch.randint(-50, 50, shape, dtype=torch.int64)


def boolean(*shape):
    return torch.rand(shape) > 0.5


def special(*shape):
    """f32 values with NaN and +-inf mixed in: layout ops must move them bit for bit."""
    t = torch.randn(shape).reshape(-1)
    for i, v in zip(range(0, t.numel(), 3), [math.nan, math.inf, -math.inf] * t.numel()):
        t[i] = v
    return t.reshape(shape)


def apply(op, a, xs):
    """torch's version of one kiln layout op; returns a list of outputs."""
    x = xs[0] if xs else None
    if op == "reshape":
        return [x.reshape(a["shape"])]
    if op == "flatten":
        return [torch.flatten(x, a.get("start", 0), a.get("end", -1))]
    if op == "squeeze":
        return [x.squeeze(a["dim"]) if "dim" in a else x.squeeze()]
    if op == "unsqueeze":
        return [x.unsqueeze(a["dim"])]
    if op == "permute":
        return [x.permute(a["dims"])]
    if op == "transpose":
        return [x.transpose(a["dim0"], a["dim1"])]
    if op == "expand":
        return [x.expand(a["shape"])]
    if op == "slice":
        dim = a["dim"] % x.dim()
        index = (slice(None),) * dim + (slice(a["start"], a["end"], a.get("step", 1)),)
        return [x[index]]
    if op == "narrow":
        return [x.narrow(a["dim"], a["start"], a["length"])]
    if op == "cat":
        return [torch.cat(xs, a.get("dim", 0))]
    if op == "stack":
        return [torch.stack(xs, a.get("dim", 0))]
    if op == "split":
        return list(torch.split(x, a["size"] if "size" in a else a["sizes"], a.get("dim", 0)))
    if op == "chunk":
        return list(torch.chunk(x, a["chunks"], a.get("dim", 0)))
    if op == "flip":
        return [torch.flip(x, a["dims"])]
    if op == "repeat":
        return [x.repeat(a["repeats"])]
    if op == "pad":
        return [F.pad(x, a["pads"], value=a.get("value", 0.0))]
    if op == "tril":
        return [torch.tril(x, a.get("diagonal", 0))]
    if op == "triu":
        return [torch.triu(x, a.get("diagonal", 0))]
    raise ValueError(op)


cases = []


def json_attrs(attrs):
    """JSON has no NaN or inf: write them as strings, as refgen does for tensor values."""
    def fix(v):
        if isinstance(v, float) and not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return v
    return {k: fix(v) for k, v in attrs.items()}


def one(name, op, inputs, **attrs):
    cases.append(case(name, op, inputs, apply(op, attrs, inputs), json_attrs(attrs)))


def chain(name, inputs, steps):
    """steps: (op, args, attrs); args index the values (inputs, then each step's outputs)."""
    values = list(inputs)
    outs = None
    for op, args, attrs in steps:
        outs = apply(op, attrs, [values[i] for i in args])
        values.extend(outs)
    js = [{"op": op, "args": args, "attrs": json_attrs(attrs)} for op, args, attrs in steps]
    cases.append(case(name, "chain", inputs, outs, {"steps": js}))


# reshape and the reshape-built ops (views)
one("reshape_2d", "reshape", [f32(2, 6)], shape=[3, 4])
one("reshape_infer", "reshape", [f32(2, 3, 4)], shape=[-1, 4])
one("reshape_infer_middle", "reshape", [i64(2, 3, 4)], shape=[2, -1, 2])
one("reshape_bool", "reshape", [boolean(4, 3)], shape=[12])
one("reshape_0d_to_1x1", "reshape", [f32()], shape=[1, 1])
one("reshape_to_0d", "reshape", [f32(1, 1)], shape=[])
one("reshape_empty", "reshape", [f32(0, 4)], shape=[2, 0, 3])
one("reshape_special", "reshape", [special(3, 4)], shape=[4, 3])
one("flatten_all", "flatten", [f32(2, 3, 4)])
one("flatten_middle", "flatten", [i64(2, 3, 4, 2)], start=1, end=2)
one("flatten_negative", "flatten", [f32(2, 3, 4)], start=-2, end=-1)
one("flatten_0d", "flatten", [f32()])
one("squeeze_all", "squeeze", [f32(1, 3, 1, 2)])
one("squeeze_dim", "squeeze", [i64(1, 3, 1, 2)], dim=2)
one("squeeze_negative_dim", "squeeze", [f32(1, 3, 1)], dim=-1)
one("squeeze_not_one_unchanged", "squeeze", [f32(2, 3)], dim=0)
one("squeeze_0d", "squeeze", [f32()], dim=0)
one("squeeze_bool", "squeeze", [boolean(1, 4)])
one("unsqueeze_front", "unsqueeze", [f32(3, 4)], dim=0)
one("unsqueeze_back", "unsqueeze", [i64(3, 4)], dim=2)
one("unsqueeze_negative", "unsqueeze", [f32(3, 4)], dim=-1)
one("unsqueeze_0d", "unsqueeze", [f32()], dim=0)
one("unsqueeze_empty", "unsqueeze", [f32(0, 2)], dim=1)

# permute / transpose
one("permute_2d", "permute", [f32(3, 5)], dims=[1, 0])
one("permute_3d", "permute", [f32(2, 3, 4)], dims=[2, 0, 1])
one("permute_4d", "permute", [f32(2, 3, 4, 5)], dims=[0, 2, 1, 3])
one("permute_4d_reverse", "permute", [i64(2, 3, 2, 4)], dims=[3, 2, 1, 0])
one("permute_negative_dims", "permute", [f32(2, 3, 4)], dims=[-1, -3, -2])
one("permute_bool", "permute", [boolean(3, 4, 2)], dims=[1, 2, 0])
one("permute_empty", "permute", [f32(0, 3, 2)], dims=[2, 0, 1])
one("permute_0d", "permute", [f32()], dims=[])
one("permute_big_inner_swap", "permute", [f32(2, 40, 36)], dims=[0, 2, 1])
one("permute_big_2d_i64", "permute", [i64(33, 47)], dims=[1, 0])
one("permute_reverse_tiled", "permute", [f32(9, 2, 10)], dims=[2, 1, 0])
one("permute_big_2d_bool", "permute", [boolean(48, 35)], dims=[1, 0])
one("transpose_last_two", "transpose", [f32(2, 3, 4)], dim0=-1, dim1=-2)
one("transpose_outer", "transpose", [i64(2, 3, 4)], dim0=0, dim1=2)
one("transpose_same_dim", "transpose", [f32(2, 3)], dim0=1, dim1=1)
one("transpose_special", "transpose", [special(3, 5)], dim0=0, dim1=1)

# expand
one("expand_row", "expand", [f32(1, 4)], shape=[3, 4])
one("expand_keep_minus_one", "expand", [f32(3, 1)], shape=[-1, 5])
one("expand_new_leading", "expand", [i64(2, 1)], shape=[2, 3, 2, 4])
one("expand_0d", "expand", [f32()], shape=[2, 3])
one("expand_to_empty", "expand", [f32(1, 3)], shape=[0, 3])
one("expand_bool", "expand", [boolean(1, 3, 1)], shape=[2, 3, 2])
one("expand_same", "expand", [f32(2, 3)], shape=[2, 3])

# slice / narrow
one("slice_basic", "slice", [f32(6, 4)], dim=0, start=1, end=5)
one("slice_step", "slice", [f32(10, 3)], dim=0, start=1, end=9, step=3)
one("slice_last_dim_step", "slice", [i64(3, 10)], dim=-1, start=0, end=10, step=2)
one("slice_negative_bounds", "slice", [f32(4, 8)], dim=1, start=-5, end=-1)
one("slice_clamped", "slice", [f32(4, 8)], dim=1, start=-100, end=100, step=3)
one("slice_empty_result", "slice", [f32(4, 8)], dim=1, start=6, end=2)
one("slice_start_past_end", "slice", [f32(4, 8)], dim=0, start=10, end=20)
one("slice_bool", "slice", [boolean(5, 6)], dim=1, start=1, end=6, step=2)
one("slice_middle_dim", "slice", [f32(2, 7, 3)], dim=1, start=2, end=7, step=2)
one("slice_of_empty", "slice", [f32(0, 5)], dim=1, start=1, end=3)
one("narrow_basic", "narrow", [f32(4, 6)], dim=1, start=2, length=3)
one("narrow_negative_start", "narrow", [i64(5, 3)], dim=0, start=-2, length=2)
one("narrow_zero_length", "narrow", [f32(2, 3)], dim=1, start=3, length=0)
one("narrow_negative_dim", "narrow", [boolean(2, 3, 4)], dim=-1, start=1, length=2)

# cat / stack
one("cat_dim0", "cat", [f32(2, 3), f32(4, 3)], dim=0)
one("cat_dim1", "cat", [f32(2, 3), f32(2, 1), f32(2, 4)], dim=1)
one("cat_negative_dim", "cat", [i64(2, 3, 2), i64(2, 3, 1)], dim=-1)
one("cat_middle_dim", "cat", [f32(2, 1, 3), f32(2, 4, 3)], dim=1)
one("cat_bool", "cat", [boolean(3), boolean(5)], dim=0)
one("cat_skips_legacy_empty", "cat", [torch.empty(0), f32(2, 3), torch.empty(0), f32(2, 2)], dim=1)
one("cat_empty_along_dim", "cat", [f32(2, 0), f32(2, 3)], dim=1)
one("cat_all_empty", "cat", [f32(0, 3), f32(0, 3)], dim=0)
one("cat_special", "cat", [special(2, 3), special(1, 3)], dim=0)
one("stack_dim0", "stack", [f32(2, 3), f32(2, 3), f32(2, 3)], dim=0)
one("stack_last", "stack", [i64(2, 3), i64(2, 3)], dim=-1)
one("stack_middle", "stack", [boolean(2, 3), boolean(2, 3)], dim=1)
one("stack_0d", "stack", [f32(), f32(), f32()], dim=0)

# split / chunk (several outputs)
one("split_size_even", "split", [f32(6, 2)], size=2, dim=0)
one("split_size_uneven", "split", [f32(3, 7)], size=3, dim=1)
one("split_sizes", "split", [i64(6, 2)], sizes=[1, 0, 3, 2], dim=0)
one("split_size_larger", "split", [f32(3, 2)], size=5, dim=0)
one("split_empty_dim", "split", [f32(0, 2)], size=2, dim=0)
one("split_negative_dim", "split", [boolean(2, 5)], size=2, dim=-1)
one("chunk_even", "chunk", [f32(6, 2)], chunks=3, dim=0)
one("chunk_uneven", "chunk", [f32(5, 2)], chunks=4, dim=0)
one("chunk_more_than_size", "chunk", [i64(2, 3)], chunks=5, dim=1)
one("chunk_empty_dim", "chunk", [f32(0, 2)], chunks=3, dim=0)

# flip
one("flip_last", "flip", [f32(3, 4)], dims=[-1])
one("flip_first", "flip", [i64(3, 4)], dims=[0])
one("flip_all_3d", "flip", [f32(2, 3, 4)], dims=[0, 1, 2])
one("flip_middle", "flip", [boolean(2, 5, 3)], dims=[1])
one("flip_empty", "flip", [f32(0, 3)], dims=[1])
one("flip_0d", "flip", [f32()], dims=[0])
one("flip_special", "flip", [special(9)], dims=[0])

# repeat
one("repeat_1d", "repeat", [f32(3)], repeats=[4])
one("repeat_2d", "repeat", [f32(2, 3)], repeats=[2, 3])
one("repeat_leading", "repeat", [i64(2, 3)], repeats=[2, 1, 2])
one("repeat_zero", "repeat", [f32(3)], repeats=[2, 0])
one("repeat_bool", "repeat", [boolean(2, 1)], repeats=[1, 4])
one("repeat_0d", "repeat", [f32()], repeats=[2, 3])
one("repeat_ones", "repeat", [f32(2, 3)], repeats=[1, 1])

# pad
one("pad_last", "pad", [f32(2, 3)], pads=[1, 2])
one("pad_two_dims_value", "pad", [f32(2, 3)], pads=[1, 0, 2, 1], value=-1.5)
one("pad_three_dims", "pad", [f32(2, 2, 2)], pads=[1, 1, 0, 2, 1, 0], value=3.0)
one("pad_negative_crops", "pad", [f32(3, 5)], pads=[-1, -2])
one("pad_mixed_signs", "pad", [f32(4, 5)], pads=[2, -1, -1, 1], value=7.0)
one("pad_crop_to_empty", "pad", [f32(2, 3)], pads=[-1, -2])
one("pad_i64", "pad", [i64(2, 3)], pads=[1, 1], value=9.0)
one("pad_bool", "pad", [boolean(2, 3)], pads=[0, 2, 1, 0], value=1.0)
one("pad_empty_input", "pad", [f32(0, 2)], pads=[1, 1, 1, 1], value=2.0)
one("pad_nan_value", "pad", [f32(2)], pads=[1, 1], value=math.nan)

# tril / triu
for name, op in (("tril", "tril"), ("triu", "triu")):
    one(name + "_square", op, [f32(4, 4)])
    one(name + "_positive_diag", op, [f32(4, 5)], diagonal=2)
    one(name + "_negative_diag", op, [f32(5, 4)], diagonal=-1)
    one(name + "_batched", op, [f32(2, 3, 3, 4)], diagonal=1)
    one(name + "_batched_negative", op, [i64(3, 4, 3)], diagonal=-2)
    one(name + "_far_diag", op, [f32(3, 3)], diagonal=-5)
    one(name + "_bool", op, [boolean(2, 4, 4)], diagonal=0)
    one(name + "_empty", op, [f32(2, 0, 3)], diagonal=0)
    one(name + "_special", op, [special(3, 3)], diagonal=0)

# chains of ops that are non-contiguous views in torch
chain("chain_transpose_slice_step_flip", [f32(6, 8)],
      [("transpose", [0], {"dim0": 0, "dim1": 1}),
       ("slice", [1], {"dim": 0, "start": 1, "end": 8, "step": 2}),
       ("flip", [2], {"dims": [1]})])
chain("chain_expand_then_cat", [f32(1, 3), f32(2, 3)],
      [("expand", [0], {"shape": [4, 3]}),
       ("cat", [2, 1], {"dim": 0})])
chain("chain_permute_4d_then_reshape", [f32(2, 3, 4, 5)],
      [("permute", [0], {"dims": [0, 2, 1, 3]}),
       ("reshape", [1], {"shape": [2, 4, 15]})])
chain("chain_permute_4d_swap_inner", [i64(2, 3, 4, 5)],
      [("permute", [0], {"dims": [1, 0, 3, 2]})])
chain("chain_slice_then_transpose_then_pad", [f32(5, 6)],
      [("slice", [0], {"dim": 1, "start": 1, "end": 6, "step": 2}),
       ("transpose", [1], {"dim0": 0, "dim1": 1}),
       ("pad", [2], {"pads": [1, 0, 0, 1], "value": 0.5})])
chain("chain_expand_flip_repeat", [i64(3, 1)],
      [("expand", [0], {"shape": [3, 4]}),
       ("flip", [1], {"dims": [0, 1]}),
       ("repeat", [2], {"repeats": [2, 1]})])
chain("chain_unsqueeze_expand_0d", [f32()],
      [("unsqueeze", [0], {"dim": 0}),
       ("expand", [1], {"shape": [2, 3]}),
       ("triu", [2], {"diagonal": 1})])
chain("chain_split_then_stack", [f32(4, 6)],
      [("split", [0], {"size": 2, "dim": 1}),
       ("stack", [1, 2, 3], {"dim": 0})])
chain("chain_chunk_transpose_cat", [boolean(4, 6)],
      [("chunk", [0], {"chunks": 2, "dim": 0}),
       ("transpose", [1], {"dim0": 0, "dim1": 1}),
       ("transpose", [2], {"dim0": 1, "dim1": 0}),
       ("cat", [4, 3], {"dim": 1})])
chain("chain_narrow_flip_tril", [f32(3, 5, 5)],
      [("narrow", [0], {"dim": 1, "start": 1, "length": 4}),
       ("flip", [1], {"dims": [-1]}),
       ("tril", [2], {"diagonal": -1})])
chain("chain_reshape_of_permute_then_slice", [f32(4, 6)],
      [("permute", [0], {"dims": [1, 0]}),
       ("reshape", [1], {"shape": [3, 8]}),
       ("slice", [2], {"dim": 1, "start": -6, "end": 8, "step": 2})])
chain("chain_squeeze_flatten_unsqueeze", [i64(1, 3, 1, 4)],
      [("squeeze", [0], {}),
       ("flatten", [1], {}),
       ("unsqueeze", [2], {"dim": -1})])

write("layout", cases)
