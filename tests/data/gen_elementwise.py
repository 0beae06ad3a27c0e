"""Reference data for the elementwise family (tests/ops/test_elementwise*.cpp).

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_elementwise.py

Attributes the C++ side reads:
  binary scalar forms:  {"scalar": s, "side": "rhs" | "lhs"}   (x op s, or s op x)
  where scalar forms:   {"scalar": s, "side": "rhs" | "lhs"}   (where(c, x, s), where(c, s, x))
  clamp:                {"min": m, "max": M}                    (either may be absent)
  cast:                 {"dtype": "f32" | "i64" | "bool"}

kiln's scalars are doubles: a whole-number scalar counts as an integer (see
engine/elementwise.h), so whole scalars are passed to torch as Python ints here.
"""
import math

import torch
import torch.nn.functional as F

from refgen import case, write

torch.manual_seed(0)
NAN, INF = float("nan"), float("inf")
cases = []


def f32(*shape, scale=2.0):
    return torch.randn(*shape) * scale


def i64(*shape, lo=-5, hi=6):
    return torch.randint(lo, hi, shape, dtype=torch.int64)


def bools(*shape):
    return torch.rand(*shape) > 0.5


def special():
    return torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-8, 30.0, -30.0,
                         100.0, -100.0, 3.0])


# ---- unary ------------------------------------------------------------------------------------
FLOAT_MATH = {
    "exp": torch.exp, "log": torch.log, "log1p": torch.log1p, "expm1": torch.expm1, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf, "gelu": F.gelu, "silu": F.silu,
    "softplus": F.softplus,
}
SAME_DTYPE = {
    "neg": torch.neg, "abs": torch.abs, "square": torch.square, "relu": torch.relu, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "sign": torch.sign,
}
PREDICATES = {"isnan": torch.isnan, "isinf": torch.isinf, "logical_not": torch.logical_not}
BOOL_OK = {"square", "sign"}  # torch rejects neg abs relu floor ceil round on bool

for name, fn in FLOAT_MATH.items():
    x = f32(3, 5)
    if name in ("log", "sqrt", "rsqrt"):
        x = x.abs() + 0.01
    if name == "log1p":
        x = x.abs() - 0.5
    cases.append(case(name + "_f32", name, [x], fn(x)))
    cases.append(case(name + "_special", name, [special()], fn(special())))
    xi = i64(2, 4, lo=0 if name in ("log", "sqrt", "rsqrt") else -3, hi=4)
    # gelu/silu/softplus reject integers in torch; kiln computes them in f32 like exp(i64).
    cases.append(case(name + "_i64", name, [xi], fn(xi.float())))
    xb = bools(5)
    cases.append(case(name + "_bool", name, [xb], fn(xb.float())))
    xt = f32(37, scale=1.0)  # more than two vectors and a tail
    if name in ("log", "sqrt", "rsqrt"):
        xt = xt.abs() + 0.01
    cases.append(case(name + "_tail37", name, [xt], fn(xt)))

for name, fn in SAME_DTYPE.items():
    x = f32(3, 5)
    cases.append(case(name + "_f32", name, [x], fn(x)))
    cases.append(case(name + "_special", name, [special()], fn(special())))
    xi = i64(2, 5)
    cases.append(case(name + "_i64", name, [xi], fn(xi)))
    if name in BOOL_OK:
        xb = bools(6)
        cases.append(case(name + "_bool", name, [xb], fn(xb)))

for name, fn in PREDICATES.items():
    cases.append(case(name + "_special", name, [special()], fn(special())))
    xi = i64(7)
    cases.append(case(name + "_i64", name, [xi], fn(xi)))
    xb = bools(7)
    cases.append(case(name + "_bool", name, [xb], fn(xb)))

cases.append(case("round_half_even", "round", [torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, 0.49999997])],
                  torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, 0.49999997]))))
cases.append(case("softplus_threshold", "softplus", [torch.tensor([19.0, 19.99, 20.0, 20.01, 25.0, -25.0])],
                  F.softplus(torch.tensor([19.0, 19.99, 20.0, 20.01, 25.0, -25.0]))))
for name in ("exp", "neg", "sigmoid"):
    fn = {**FLOAT_MATH, **SAME_DTYPE}[name]
    x0 = torch.tensor(0.75)
    cases.append(case(name + "_0d", name, [x0], fn(x0)))
    xe = torch.zeros(0, 3)
    cases.append(case(name + "_empty", name, [xe], fn(xe)))

# ---- cast -------------------------------------------------------------------------------------
CAST_SRC = {
    "f32": torch.tensor([1.5, -2.7, 0.0, -0.0, 3.99, -3.99, 1e10, -1e10, NAN, 0.25]),
    "i64": torch.tensor([0, 1, -1, 7, -9, 2**40, -2**40, 123456789]),
    "bool": torch.tensor([True, False, True, True, False]),
}
TORCH_DTYPE = {"f32": torch.float32, "i64": torch.int64, "bool": torch.bool}
for src, x in CAST_SRC.items():
    for dst, dt in TORCH_DTYPE.items():
        cases.append(case("cast_%s_to_%s" % (src, dst), "cast", [x], x.to(dt), {"dtype": dst}))
cases.append(case("cast_0d", "cast", [torch.tensor(2.5)], torch.tensor(2.5).to(torch.int64), {"dtype": "i64"}))
cases.append(case("cast_empty", "cast", [torch.zeros(2, 0)], torch.zeros(2, 0).to(torch.bool), {"dtype": "bool"}))

# ---- binary -----------------------------------------------------------------------------------
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow,
    "remainder": torch.remainder, "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
}
NO_BOOL_PAIR = {"sub", "pow", "remainder"}  # torch rejects two bool operands
NO_BOOL_ANY = {"sub"}


def scalar_tensor(s, other):
    """The 0-d tensor a kiln scalar operand stands for next to `other`."""
    if other.dtype == torch.float32 or not float(s).is_integer():
        return torch.tensor(float(s))
    return torch.tensor(int(s))


def binary_operands(name):
    """(label, a, b) pairs for one op: dtypes, broadcasting, 0-d, empty."""
    pos = name in ("pow",)
    a = f32(2, 3)
    if pos:
        a = a.abs() + 0.1
    out = [
        ("f32", a, f32(2, 3)),
        ("bcast_2x3_3", a, f32(3)),
        ("bcast_2x1x4_3x1", f32(2, 1, 4).abs() + 0.1 if pos else f32(2, 1, 4), f32(3, 1)),
        ("bcast_0d_lhs", torch.tensor(1.25), f32(2, 3)),
        ("bcast_0d_rhs", f32(2, 3).abs() + 0.1 if pos else f32(2, 3), torch.tensor(-0.75)),
        ("both_0d", torch.tensor(1.5), torch.tensor(0.5)),
        ("empty", torch.zeros(0, 3), f32(3)),
        ("tail37", f32(37).abs() + 0.1 if pos else f32(37), f32(37)),
        ("i64_i64", i64(2, 3), i64(3, lo=1 if name == "remainder" else -4, hi=5)),
        ("i64_f32", i64(2, 3, lo=1 if pos else -5), f32(2, 3)),
        ("f32_i64", f32(2, 3).abs() + 0.1 if pos else f32(2, 3), i64(3, lo=1 if name == "remainder" else -3, hi=4)),
        ("i64_0d_f32", i64(2, 3, lo=1 if pos else -5), torch.tensor(0.5)),
    ]
    if name not in NO_BOOL_ANY:
        out.append(("bool_i64", bools(2, 3), i64(3, lo=1, hi=4)))
        out.append(("f32_bool", f32(2, 3).abs() + 0.1 if pos else f32(2, 3), torch.tensor([True, True, True])))
        if name not in NO_BOOL_PAIR:
            out.append(("bool_bool", bools(2, 3), bools(2, 3)))
    return out


for name, fn in BINARY.items():
    for label, a, b in binary_operands(name):
        cases.append(case("%s_%s" % (name, label), name, [a, b], fn(a, b)))
    x = f32(2, 3)
    if name == "pow":
        x = x.abs() + 0.1
    xi = i64(2, 3, lo=1 if name == "remainder" else -5)
    scalars = [(x, 2.5), (x, -3), (xi, 2), (xi, 2.5)]
    if name not in NO_BOOL_ANY:
        scalars.append((bools(4), 2))
    for k, (t, s) in enumerate(scalars):
        st = scalar_tensor(s, t)
        for side in ("rhs", "lhs"):
            if name == "pow" and side == "rhs" and t.dtype == torch.int64 and s < 0:
                continue  # an error in torch and kiln alike (tested in C++)
            if name == "remainder" and side == "lhs" and t.dtype != torch.float32:
                continue  # the integer tensor holds zeros or falses: a division by zero
            ref = fn(t, st) if side == "rhs" else fn(st, t)
            cases.append(case("%s_scalar%d_%s" % (name, k, side), name, [t], ref, {"scalar": s, "side": side}))

# Edge cases of particular ops.
e_a = torch.tensor([NAN, 1.0, NAN, -INF, INF, 0.0, 2.0])
e_b = torch.tensor([1.0, NAN, NAN, 1.0, -1.0, -0.0, INF])
for name in ("add", "sub", "mul", "div", "maximum", "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "pow"):
    cases.append(case(name + "_nan_inf", name, [e_a, e_b], BINARY[name](e_a, e_b)))
ra = torch.tensor([-3.0, 3.0, -3.0, 3.0, 5.5, -5.5, 7.0, -7.0, 0.0, -0.0, 4.0, 1e-3, -INF, NAN, 5.0])
rb = torch.tensor([2.0, -2.0, -2.0, 2.0, 2.0, -2.0, 0.0, INF, 3.0, 3.0, -INF, -1.0, 2.0, 2.0, NAN])
cases.append(case("remainder_signs", "remainder", [ra, rb], torch.remainder(ra, rb)))
# i64 min % -1 traps in torch itself: test_elementwise_behaviour.cpp checks that kiln gives 0.
ria = torch.tensor([-7, 7, -7, 7, 0, -9223372036854775807 - 1, 5, -6])
rib = torch.tensor([3, -3, -3, 3, 5, 7, 1, 4])
cases.append(case("remainder_i64_signs", "remainder", [ria, rib], torch.remainder(ria, rib)))
pa = torch.tensor([1, -1, 2, 3, -2, 0, 1, -1, 7, 2])
pb = torch.tensor([-1, -3, -2, 0, 3, 2, -5, -4, 2, 62])
cases.append(case("pow_i64_negative_exponent", "pow", [pa, pb], torch.pow(pa, pb)))
da = torch.tensor([1, -1, 0, 7, -7])
db = torch.tensor([0, 0, 0, 2, 2])
cases.append(case("div_i64_by_zero", "div", [da, db], torch.div(da, db)))
la = torch.tensor([0.0, NAN, -0.0, 2.0, 0.0, 1.0])
lb = torch.tensor([5, 0, 0, 0, 1, -3])
for name in ("logical_and", "logical_or", "logical_xor"):
    cases.append(case(name + "_nan_zero", name, [la, lb], BINARY[name](la, lb)))

# ---- where ------------------------------------------------------------------------------------
c23 = bools(2, 3)


def add_where(label, c, a, b, attrs=None):
    cases.append(case("where_" + label, "where", [c, a, b], torch.where(c, a, b), attrs))


add_where("f32", c23, f32(2, 3), f32(2, 3))
add_where("bcast_3", c23, f32(2, 3), f32(3))
add_where("bcast_3way", bools(2, 1, 3), f32(4, 1), f32(3))
add_where("cond_0d", torch.tensor(True), f32(2, 3), f32(2, 3))
add_where("i64", c23, i64(2, 3), i64(2, 3))
add_where("i64_f32", c23, i64(2, 3), f32(3))
add_where("bool", c23, bools(2, 3), bools(2, 3))
add_where("bool_i64", c23, bools(2, 3), i64(1))
add_where("nan", torch.tensor([True, False, True]), torch.tensor([NAN, 1.0, -INF]), torch.tensor([0.0, NAN, 2.0]))
add_where("empty", torch.zeros(0, 3, dtype=torch.bool), torch.zeros(0, 3), f32(3))
add_where("tail37", bools(37), f32(37), f32(37))
for k, (t, s) in enumerate([(f32(2, 3), 2.5), (i64(2, 3), 4), (i64(2, 3), 0.5), (bools(2, 3), 1)]):
    c = bools(2, 3)
    st = scalar_tensor(s, t)
    cases.append(case("where_scalar%d_rhs" % k, "where", [c, t], torch.where(c, t, st), {"scalar": s, "side": "rhs"}))
    cases.append(case("where_scalar%d_lhs" % k, "where", [c, t], torch.where(c, st, t), {"scalar": s, "side": "lhs"}))

# ---- clamp ------------------------------------------------------------------------------------


def add_clamp(label, x, lo=None, hi=None):
    attrs = {}
    if lo is not None:
        attrs["min"] = lo
    if hi is not None:
        attrs["max"] = hi
    cases.append(case("clamp_" + label, "clamp", [x], torch.clamp(x, min=lo, max=hi), attrs))


xc = f32(3, 4)
add_clamp("f32_both", xc, -1.0, 1.5)
add_clamp("f32_min", xc, -0.5)
add_clamp("f32_max", xc, None, 0.25)
add_clamp("f32_min_above_max", xc, 2.0, -1.0)
add_clamp("f32_special", special(), -2.0, 2.0)
add_clamp("f32_int_bounds", xc, -1, 1)
add_clamp("i64_int_bounds", i64(3, 4), -2, 3)
add_clamp("i64_float_min", i64(3, 4), 0.5)
add_clamp("i64_max_only", i64(3, 4), None, 1)
add_clamp("bool_int_min", bools(6), 0)
add_clamp("bool_float_max", bools(6), None, 0.5)
add_clamp("0d", torch.tensor(3.5), 0.0, 1.0)
add_clamp("empty", torch.zeros(0), 0.0, 1.0)
add_clamp("tail37", f32(37), -0.5, 0.5)

# ---- small arguments, where the answer is about as small as the argument ----------------------------
# Compared without an absolute tolerance (test_elementwise.cpp: cases named *_small): an error
# of 1e-7 on a result of 1e-6 is one of 10%, which atol 1e-6 would let through.
SMALL = torch.tensor([1e-6, -1e-6, 3e-5, -2e-4, 1e-3, -7e-3, 0.02, -0.1, 0.3, -0.45, 1e-30, -0.0])
for name in ("expm1", "log1p", "tanh", "sin", "tan", "erf", "silu", "gelu"):
    fn = FLOAT_MATH[name]
    cases.append(case(name + "_small", name, [SMALL], fn(SMALL)))

# ---- trigonometry of large arguments ----------------------------------------------------------------
# From 1e5 up kiln's GPU kernels reduce by pi/2 with Payne and Hanek's method; PyTorch reduces
# exactly. Exponents 2^16 to 2^127 of both signs, the bounds of the two reductions (1e5 and just
# below it), f32's largest value, and 16367173 * 2^72, the float nearest a multiple of pi/2
# (its remainder is about 1.6e-9, so sin and tan of it are as small).
gen = torch.Generator().manual_seed(7)
exponents = torch.arange(16, 128, 2, dtype=torch.float64)
mantissas = 1.0 + torch.rand(exponents.numel(), generator=gen, dtype=torch.float64)
signs = torch.where(torch.rand(exponents.numel(), generator=gen) < 0.5, -1.0, 1.0).double()
LARGE = torch.cat([(signs * mantissas * 2.0 ** exponents).float(),
                   torch.tensor([1e5, -1e5, 99999.99, 123456.79, 3.4028235e38, -3.4028235e38, 16367173 * 2.0 ** 72])])
for name in ("sin", "cos", "tan"):
    cases.append(case(name + "_large", name, [LARGE], FLOAT_MATH[name](LARGE)))

write("elementwise", cases)
