"""Reference data for f16 and bf16 tensors (tests/devices/vulkan/test_vulkan_half.cpp): every
elementwise op, promotion next to other dtypes, casts, a chain that fuses, layout ops, creation,
and an f16 product followed by a bias and an activation. Written to half.json.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_half.py

What an op on 16-bit floats means here is what PyTorch's CUDA kernels compute (kiln's 16-bit
floats live on GPUs): the operands widened to f32, the op's f32 math, the result rounded once to
the op's dtype (round to nearest even). A scalar operand stays an f32 (PyTorch's CUDA kernels
take a Python scalar in their f32 "opmath" type, unrounded). So each reference is
`op(x.float(), ...).to(dtype)`, op by op: PyTorch 1.13's CPU kernels for Half are partial,
and this form pins the rounding points whatever the host. JSON data are the values as floats
(every one exact in its dtype); the C++ side uploads them as f32 and casts on the device.

Attributes as in gen_elementwise.py: {"scalar": s, "side": "rhs" | "lhs"}, {"min": m, "max": M},
{"dtype": "..."}; layout cases carry their own ({"dims": [...]}, ...).
"""
import math

import torch
import torch.nn.functional as F

from refgen import case, write

torch.manual_seed(0)
NAN, INF = float("nan"), float("inf")
HALVES = {"f16": torch.float16, "bf16": torch.bfloat16}
cases = []


def rounded(t, dtype):
    return t.to(dtype)


def randn(dtype, *shape, scale=2.0):
    return rounded(torch.randn(*shape) * scale, dtype)


def special(dtype):
    # f16 overflows past 65504 (70000 becomes inf), has subnormals below 6.1e-5 (1e-6 is one);
    # bf16 keeps f32's range with 8 bits of mantissa.
    return rounded(torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-6, 3.0, 70000.0,
                                 -100.0, 0.1, 1.0 / 3.0]), dtype)


def via_f32(fn, dtype, *xs):
    """fn on the operands widened to f32, rounded once to dtype (bool results stay bool)."""
    y = fn(*[x.float() if x.is_floating_point() else x for x in xs])
    return y if y.dtype == torch.bool else rounded(y, dtype)


FLOAT_MATH = {
    "exp": torch.exp, "log": torch.log, "log1p": torch.log1p, "expm1": torch.expm1, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf, "gelu": F.gelu, "silu": F.silu,
    "softplus": F.softplus, "neg": torch.neg, "abs": torch.abs, "square": torch.square, "relu": torch.relu,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "sign": torch.sign,
    "isnan": torch.isnan, "isinf": torch.isinf, "logical_not": torch.logical_not,
}
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow,
    "remainder": torch.remainder, "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
}

for tag, dt in HALVES.items():
    # ---- unary: every op, on random values and on the specials --------------------------------
    for name, fn in FLOAT_MATH.items():
        x = randn(dt, 3, 7)
        if name in ("log", "sqrt", "rsqrt"):
            x = x.abs() + rounded(torch.tensor(0.01), dt)
        if name == "log1p":
            x = x.abs() - 0.5
        cases.append(case("%s_%s" % (name, tag), name, [x], via_f32(fn, dt, x)))
        cases.append(case("%s_%s_special" % (name, tag), name, [special(dt)], via_f32(fn, dt, special(dt))))

    # ---- binary: both operands half, broadcasting, a scalar on either side ---------------------
    for name, fn in BINARY.items():
        a, b = randn(dt, 2, 3), randn(dt, 3)
        if name == "pow":
            a = a.abs() + 0.125
        cases.append(case("%s_%s" % (name, tag), name, [a, b], via_f32(fn, dt, a, b)))
        # 0.1 is no 16-bit value: it must stay an f32 scalar (a 0-d f32 tensor next to f32 here).
        s, t = torch.tensor(0.1), torch.tensor(-1.5)
        cases.append(case("%s_%s_rhs_scalar" % (name, tag), name, [a], via_f32(lambda u: fn(u, s), dt, a),
                          {"scalar": 0.1, "side": "rhs"}))
        cases.append(case("%s_%s_lhs_scalar" % (name, tag), name, [b], via_f32(lambda u: fn(t, u), dt, b),
                          {"scalar": -1.5, "side": "lhs"}))

    # ---- where, clamp ---------------------------------------------------------------------------
    c = torch.rand(2, 3) > 0.5
    a, b = randn(dt, 2, 3), randn(dt, 3)
    cases.append(case("where_%s" % tag, "where", [c, a, b], torch.where(c, a, b)))
    cases.append(case("where_%s_scalar" % tag, "where", [c, a], torch.where(c, a, rounded(torch.tensor(0.3), dt)),
                      {"scalar": 0.3, "side": "rhs"}))
    x = special(dt)
    cases.append(case("clamp_%s" % tag, "clamp", [x], via_f32(lambda u: u.clamp(-0.7, 2.2), dt, x),
                      {"min": -0.7, "max": 2.2}))

    # ---- promotion next to the other dtypes (the result's dtype is the reference's) -------------
    h = randn(dt, 2, 3)
    f = torch.randn(3)
    i = torch.randint(-4, 5, (3,))
    bo = torch.rand(3) > 0.5
    cases.append(case("add_%s_f32" % tag, "add", [h, f], h.float() + f))
    cases.append(case("mul_%s_i64" % tag, "mul", [h, i], rounded(h.float() * i, dt)))
    cases.append(case("add_i64_%s" % tag, "add", [i, h], rounded(i + h.float(), dt)))
    cases.append(case("mul_bool_%s" % tag, "mul", [bo, h], rounded(bo * h.float(), dt)))
    cases.append(case("div_i64_%s" % tag, "div", [i, h], rounded(i / h.float(), dt)))
    cases.append(case("lt_%s_f32" % tag, "lt", [h, f], h.float() < f))

    # ---- casts to and from every dtype ----------------------------------------------------------
    srcs = {
        "f32": torch.tensor([1.5, -2.7, 0.0, -0.0, 3.99, 1e-6, 70000.0, 1e10, NAN, INF, 0.1]),
        "i64": torch.tensor([0, 1, -1, 7, 2049, -9, 123456]),
        "bool": torch.tensor([True, False, True]),
    }
    for src, x in srcs.items():
        cases.append(case("cast_%s_to_%s" % (src, tag), "cast", [x], x.to(dt), {"dtype": tag}))
    y = rounded(torch.tensor([1.5, -2.7, 0.0, 3.99, -3.99, 65504.0, 1e-6, NAN, INF, 0.1]), dt)
    for dst, ddt in {"f32": torch.float32, "i64": torch.int64, "bool": torch.bool}.items():
        if dst == "i64":  # torch leaves NaN and inf to i64 undefined; kiln's rule is its own
            y = y[:7]
        cases.append(case("cast_%s_to_%s" % (tag, dst), "cast", [y], y.to(ddt), {"dtype": dst}))

# f16 <-> bf16: through f32, rounded once more (bf16 has 8 bits of mantissa, f16 a smaller range).
x16 = rounded(torch.tensor([1.0009765625, 3.14159, 65504.0, 1e-6, -0.1]), torch.float16)
cases.append(case("cast_f16_to_bf16", "cast", [x16], x16.to(torch.bfloat16), {"dtype": "bf16"}))
xb = rounded(torch.tensor([1.0, 3.14159, 1e5, 1e-30, -0.1]), torch.bfloat16)
cases.append(case("cast_bf16_to_f16", "cast", [xb], xb.to(torch.float16), {"dtype": "f16"}))
cases.append(case("add_f16_bf16", "add", [x16, xb], x16.float() + xb.float()))


# ---- a chain that fuses: GELU written as five ops, rounded after each, as its ops would be --------
def gelu_chain(x, dt):
    t = rounded(x.float() * 0.7071067811865476, dt)
    t = rounded(torch.erf(t.float()), dt)
    t = rounded(t.float() + 1, dt)
    t = rounded(x.float() * t.float(), dt)
    return rounded(t.float() * 0.5, dt)


for tag, dt in HALVES.items():
    x = randn(dt, 4, 33)
    cases.append(case("gelu_chain_" + tag, "gelu_chain", [x], gelu_chain(x, dt)))

# Long enough (4099 elements) that the Vulkan kernels move most elements four at a time (8-byte
# loads of 16-bit words, 16-byte ones of f32) and the rest one by one.
x = randn(torch.float16, 4099)
cases.append(case("gelu_chain_f16_long", "gelu_chain", [x], gelu_chain(x, torch.float16)))
x32 = torch.randn(4099) * 100
cases.append(case("cast_f32_to_bf16_long", "cast", [x32], x32.to(torch.bfloat16), {"dtype": "bf16"}))
cases.append(case("add_f16_f32_long", "add", [x, x32], x.float() + x32))

# ---- reductions: accumulated in f32, the result rounded once to the input's dtype --------------------
# (PyTorch's CUDA kernels; argmax and any give i64 and bool). Attributes: {"dims": [...] or
# "dim": d, "keepdim": bool, "correction": c}.
for tag, dt in HALVES.items():
    x = randn(dt, 3, 17)
    x[1, 4] = 0.0
    x[2, :] = 0.0
    pos = rounded(torch.rand(3, 17) * 0.5 + 0.75, dt)  # products of 17 stay in range
    red = [
        ("sum", x, {"dims": [1]}, lambda u: u.sum(1)),
        ("sum", x, {"dims": []}, lambda u: u.sum()),
        ("mean", x, {"dims": [0], "keepdim": True}, lambda u: u.mean(0, keepdim=True)),
        ("prod", pos, {"dims": [1]}, lambda u: u.prod(1)),
        ("max", x, {"dims": [1]}, lambda u: u.max(1).values),
        ("min", x, {"dims": []}, lambda u: u.min()),
        ("argmax", x, {"dim": 1}, lambda u: u.argmax(1)),
        ("argmin", x, {"dim": 0}, lambda u: u.argmin(0)),
        ("any", x, {"dims": [1]}, lambda u: u.bool().any(1)),
        ("all", x, {"dims": [0]}, lambda u: u.bool().all(0)),
        ("var", x, {"dims": [1], "correction": 1}, lambda u: u.var(1, unbiased=True)),
        ("std", x, {"dims": [0], "correction": 0}, lambda u: u.std(0, unbiased=False)),
        ("logsumexp", x, {"dims": [1]}, lambda u: torch.logsumexp(u, 1)),
        ("softmax", x, {"dim": 1}, lambda u: torch.softmax(u, 1)),
        ("log_softmax", x, {"dim": 0}, lambda u: torch.log_softmax(u, 0)),
    ]
    for i, (name, t, attrs, fn) in enumerate(red):
        y = fn(t.float())
        if y.is_floating_point():
            y = rounded(y, dt)
        cases.append(case("reduce_%s_%s_%d" % (name, tag, i), name, [t], y, attrs))
    # cumsum: each prefix rounded once (from float64 here: the f32 order of summation differs
    # between kiln and PyTorch's CPU loop).
    cases.append(case("reduce_cumsum_%s_short" % tag, "cumsum", [x], rounded(x.double().cumsum(1), dt), {"dim": 1}))

# A row of 9000 takes the kernel that splits a row into chunks and carries their totals (in f32).
long_row = randn(torch.float16, 1, 9000, scale=0.1)
cases.append(case("reduce_cumsum_f16_split", "cumsum", [long_row], rounded(long_row.double().cumsum(1), torch.float16),
                  {"dim": 1}))

# ---- index ops that move values (gather, scatter, index_select, masked_fill) ------------------------
for tag, dt in HALVES.items():
    x = randn(dt, 4, 5)
    x[0, 0] = NAN
    gi = torch.tensor([[0, 4, 2], [1, 1, 3], [4, 0, 0], [2, 3, 1]])
    cases.append(case("index_gather_" + tag, "gather", [x, gi], torch.gather(x, 1, gi), {"dim": 1}))
    si = torch.tensor([[3, 0, 1, 2, 0]])  # no position twice (torch leaves that undefined)
    src = randn(dt, 1, 5)
    cases.append(case("index_scatter_" + tag, "scatter", [x, si, src], torch.scatter(x, 0, si, src), {"dim": 0}))
    ii = torch.tensor([2, 0, 2, 3])
    cases.append(case("index_select_" + tag, "index_select", [x, ii], torch.index_select(x, 0, ii), {"dim": 0}))
    m = torch.rand(4, 5) > 0.5
    cases.append(case("index_masked_fill_" + tag, "masked_fill", [x, m], x.masked_fill(m, 0.1), {"value": 0.1}))
    # sort and topk order by value: distinct values (exact in both dtypes), a NaN and infinities;
    # the reference sorts the f32 values stably, as kiln does.
    v = rounded((torch.randperm(21).reshape(3, 7) - 10) * 0.25, dt)
    v[0, 3], v[1, 1], v[2, 6] = NAN, INF, -INF
    sv, si = torch.sort(v.float(), dim=1, stable=True)
    cases.append(case("index_sort_" + tag, "sort", [v], [rounded(sv, dt), si], {"dim": 1, "descending": False}))
    sv, si = torch.sort(v.float(), dim=0, descending=True, stable=True)
    cases.append(case("index_sort_desc_" + tag, "sort", [v], [rounded(sv, dt), si], {"dim": 0, "descending": True}))
    tv, ti = torch.topk(v[1:].float(), 3, dim=1, largest=True)
    cases.append(case("index_topk_" + tag, "topk", [v[1:]], [rounded(tv, dt), ti], {"dim": 1, "k": 3, "largest": True}))

# ---- layout ops move 16-bit values as they are ------------------------------------------------------
x = randn(torch.float16, 3, 4, 5)
y = randn(torch.float16, 3, 2, 5)
cases.append(case("permute_f16", "permute", [x], x.permute(2, 0, 1), {"dims": [2, 0, 1]}))
cases.append(case("transpose_f16", "transpose", [x[0]], x[0].t(), {"dims": [0, 1]}))
cases.append(case("cat_f16", "cat", [x, y], torch.cat([x, y], 1), {"dim": 1}))
cases.append(case("slice_f16", "slice", [x], x[:, 1:4:2], {"dim": 1, "start": 1, "end": 4, "step": 2}))
cases.append(case("flip_f16", "flip", [x], x.flip(2), {"dims": [2]}))
xb = randn(torch.bfloat16, 2, 3)
cases.append(case("pad_bf16", "pad", [xb], F.pad(xb, (1, 2), value=1.5), {"pad": [1, 2], "value": 1.5}))
cases.append(case("pad_f16", "pad", [x[0]], F.pad(x[0], (2, 0, 1, 1), value=0.1), {"pad": [2, 0, 1, 1], "value": 0.1}))
cases.append(case("tril_bf16", "tril", [xb], xb.tril()))

# ---- creation in a 16-bit dtype: the value rounded once ---------------------------------------------
cases.append(case("full_f16", "full", [], torch.full((2, 3), 0.1, dtype=torch.float16), {"value": 0.1}))
cases.append(case("full_bf16", "full", [], torch.full((4,), 1e30, dtype=torch.bfloat16), {"value": 1e30}))
cases.append(case("arange_f16", "arange", [], torch.arange(0, 5, 0.5).to(torch.float16),
                  {"start": 0, "end": 5, "step": 0.5}))

# ---- an f16 product, then a bias and relu (f32 accumulation, rounded once; then op by op) ---------
a = randn(torch.float16, 8, 48, scale=0.5)
w = randn(torch.float16, 48, 24, scale=0.5)
bias = randn(torch.float16, 24)
prod = rounded(a.float() @ w.float(), torch.float16)
cases.append(case("linear_relu_f16", "linear_relu", [a, w, bias],
                  rounded(torch.relu(rounded(prod.float() + bias.float(), torch.float16).float()), torch.float16)))
# ---- reductions that take the elementwise ops around them into their kernel ------------------------
# (a prologue computed as the reduction reads, an epilogue applied as it writes): the reference
# rounds after every op, as the ops would one by one; the reductions accumulate in f32.
def r(t, dt):
    return rounded(t, dt)


for tag, dt in HALVES.items():
    x, mask = randn(dt, 8, 128), randn(dt, 128)
    scores = r(r(x.float() * 0.125, dt).float() + mask.float(), dt)
    cases.append(case("fused_attention_softmax_" + tag, "attention_softmax", [x, mask],
                      r(torch.softmax(scores.float(), -1), dt)))
    x = randn(dt, 64, 64)
    ms = r((r(x.float() * x.float(), dt).float()).mean(1), dt)
    cases.append(case("fused_rms_" + tag, "rms", [x], r(torch.rsqrt(r(ms.float() + 1e-5, dt).float()), dt)))
# Rows longer than a softmax kernel holds in registers: split into chunks, merged, rewritten.
x, mask = randn(torch.float16, 2, 9000), randn(torch.float16, 9000)
scores = r(r(x.float() * 0.125, torch.float16).float() + mask.float(), torch.float16)
cases.append(case("fused_attention_softmax_f16_long", "attention_softmax", [x, mask],
                  r(torch.softmax(scores.float(), -1), torch.float16)))
# Sums of squares along rows (four elements a thread), along columns, and over two dims that are
# not adjacent (the group then runs in steps through memory); a softmax with an epilogue.
x = randn(torch.float16, 3, 1000, scale=1.0)
cases.append(case("fused_sum_squares_rows_f16", "sum_squares", [x], r(r(x.float() ** 2, torch.float16).float().sum(1),
                                                                       torch.float16), {"dims": [1]}))
x = randn(torch.bfloat16, 300, 7, scale=1.0)
cases.append(case("fused_sum_squares_cols_bf16", "sum_squares", [x],
                  r(r(x.float() ** 2, torch.bfloat16).float().sum(0), torch.bfloat16), {"dims": [0]}))
x = randn(torch.float16, 3, 4, 5, scale=1.0)
cases.append(case("fused_sum_squares_gathered_f16", "sum_squares", [x],
                  r(r(x.float() ** 2, torch.float16).float().sum((0, 2)), torch.float16), {"dims": [0, 2]}))
x = randn(torch.bfloat16, 6, 40)
cases.append(case("fused_softmax_times_three_bf16", "softmax_times_three", [x],
                  r(r(torch.softmax(x.float(), 1), torch.bfloat16).float() * 3, torch.bfloat16)))

# ---- scatter_add: in index order, each sum rounded to the dtype (a 16-bit accumulator, as
# PyTorch's CUDA atomics add; kiln's order is the index's, so duplicates give one defined value) -
def scatter_add_rounded(x, dim, index, src, dt):
    out = x.clone()
    for pos in torch.cartesian_prod(*[torch.arange(n) for n in index.shape]).reshape(-1, index.dim()):
        at = list(pos.tolist())
        target = list(at)
        target[dim] = int(index[tuple(at)])
        out[tuple(target)] = r(out[tuple(target)].float() + src[tuple(at)].float(), dt)
    return out


for tag, dt in HALVES.items():
    x = randn(dt, 3, 5)
    index = torch.tensor([[0, 4, 4, 1], [2, 2, 2, 2], [3, 0, 1, 4]])  # duplicates along dim 1
    src = randn(dt, 3, 4, scale=100.0)
    cases.append(case("index_scatter_add_" + tag, "scatter_add", [x, index, src],
                      scatter_add_rounded(x, 1, index, src, dt), {"dim": 1}))


# ---- a 0-d tensor next to a 16-bit one: the dimensioned operand's floating dtype wins (PyTorch's
# rule for 0-d tensors), the 0-d value converted to it (as a device tensor is) before the f32 op --
h, hb = randn(torch.float16, 2, 3), randn(torch.bfloat16, 3)
z32, zb, z16 = torch.tensor(0.1), rounded(torch.tensor(-1.7), torch.bfloat16), rounded(torch.tensor(2.3), torch.float16)
i = torch.randint(-4, 5, (3,))
cases.append(case("add_f16_0d_f32", "add", [h, z32], via_f32(lambda u, v: u + v, torch.float16, h, z32.half())))
cases.append(case("mul_0d_f32_bf16", "mul", [z32, hb],
                  via_f32(lambda u, v: u * v, torch.bfloat16, z32.bfloat16(), hb)))
cases.append(case("sub_f16_0d_bf16", "sub", [h, zb], via_f32(lambda u, v: u - v, torch.float16, h, zb.half())))
cases.append(case("add_i64_0d_f16", "add", [i, z16], via_f32(lambda u, v: u + v, torch.float16, i, z16)))


# ---- rounding at the edges of each format: ties to even, the overflow threshold of f16 (65519 stays
# finite, 65520 rounds to inf), its subnormals and the tie below the smallest (2.98e-8 -> 0), an
# f32 subnormal, values near f32's largest (bf16 keeps them finite), and a sweep of exponents.
EDGES = [0.0, -0.0, 1.0, -1.0, 0.1, 65504.0, 65519.0, 65520.0, -70000.0, 6.1e-5, 5.96e-8, 2.98e-8, 2.99e-8,
         1e-9, 1e-40, INF, -INF, NAN, 1.00048828125, 1.00146484375, 3.0e38, 1.00390625, 1.01171875, 255.5, -1e-3]
EDGES += [math.ldexp(1.0 + i / 137.0, i % 40 - 20) for i in range(100)]
edges = torch.tensor(EDGES, dtype=torch.float32)
ints = torch.tensor([0, 1, -7, 2049, 65504, 1 << 20])
for tag, dt in HALVES.items():
    cases.append(case("cast_f32_to_%s_edges" % tag, "cast", [edges], edges.to(dt), {"dtype": tag}))
    cases.append(case("cast_i64_to_%s_edges" % tag, "cast", [ints], ints.to(dt), {"dtype": tag}))

write("half", cases)
