"""Gradient reference data for the elementwise family (tests/autograd/test_rules_elementwise.cpp).

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_grad_elementwise.py
Case layout: gradgen.py. attrs the C++ side reads to call the kiln op:
  binary scalar forms:  {"scalar": s, "side": "rhs" | "lhs"}   (x op s, or s op x)
  clamp:                {"min": m, "max": M}                    (either may be absent)
  cast:                 {"dtype": "f32" | "i64" | "bool"}
Smooth cases keep their inputs a few finite-difference steps (1e-2) away from kinks, integers
(floor, remainder) and domain edges; the kink cases set fd false.
"""
import torch
import torch.nn.functional as F

from gradgen import grad_case
from refgen import write

torch.manual_seed(0)
cases = []


def rnd(*shape):
    return torch.randn(shape)


def positive(*shape):
    return torch.rand(shape) * 1.5 + 0.5


def away_from_zero(*shape):
    return (torch.rand(shape) * 1.8 + 0.2) * torch.where(torch.rand(shape) > 0.5, 1.0, -1.0)


def off_integer(*shape):
    """Fractional parts in [0.15, 0.35] or [0.65, 0.85]: far from floor/ceil/round's jumps."""
    frac = torch.rand(shape) * 0.2 + 0.15
    frac = torch.where(torch.rand(shape) > 0.5, frac, frac + 0.5)
    return torch.randint(-3, 3, shape).float() + frac


def i64(*shape):
    return torch.randint(-4, 5, shape, dtype=torch.int64)


UNARY = {
    "neg": (torch.neg, rnd), "abs": (torch.abs, away_from_zero), "exp": (torch.exp, rnd),
    "log": (torch.log, positive), "log1p": (torch.log1p, positive), "expm1": (torch.expm1, rnd),
    "sqrt": (torch.sqrt, positive), "rsqrt": (torch.rsqrt, positive), "square": (torch.square, rnd),
    "reciprocal": (torch.reciprocal, away_from_zero), "sin": (torch.sin, rnd), "cos": (torch.cos, rnd),
    "tan": (torch.tan, lambda *s: torch.rand(s) * 2 - 1), "tanh": (torch.tanh, rnd),
    "sigmoid": (torch.sigmoid, rnd), "erf": (torch.erf, rnd), "relu": (torch.relu, away_from_zero),
    "gelu": (F.gelu, rnd), "silu": (F.silu, rnd), "softplus": (F.softplus, rnd),
    "floor": (torch.floor, off_integer), "ceil": (torch.ceil, off_integer), "round": (torch.round, off_integer),
    "sign": (torch.sign, away_from_zero),
}

for name, (fn, make) in UNARY.items():
    cases.append(grad_case(name + "_2x3", name, fn, [make(2, 3)]))
    cases.append(grad_case(name + "_0d", name, fn, [make()]))

# Kinks: torch's conventions at 0 and at the softplus threshold.
kink = torch.tensor([0.0, -1.0, 1.0, -0.0])
for name in ("abs", "relu", "sign"):
    cases.append(grad_case(name + "_at_zero", name, UNARY[name][0], [kink], fd=False))
cases.append(grad_case("softplus_threshold", "softplus", F.softplus,
                       [torch.tensor([19.5, 20.5, 25.0, -25.0, 30.0, 0.0])]))
cases.append(grad_case("sqrt_at_zero", "sqrt", torch.sqrt, [torch.tensor([0.0, 1.0, 4.0])], fd=False))
# Integer inputs take no gradient.
cases.append(grad_case("exp_i64", "exp", torch.exp, [i64(2, 3)]))
cases.append(grad_case("cast_i64_f32", "cast", lambda x: x.to(torch.float32), [i64(2, 3)], {"dtype": "f32"}))
cases.append(grad_case("cast_bool_f32", "cast", lambda x: x.to(torch.float32), [torch.rand(4) > 0.5],
                       {"dtype": "f32"}))


# ---- binary ----
def t_maximum(a, b):
    return torch.maximum(a, b if torch.is_tensor(b) else torch.tensor(float(b)))


def t_minimum(a, b):
    return torch.minimum(a, b if torch.is_tensor(b) else torch.tensor(float(b)))


def lhs_maximum(s, x):
    return torch.maximum(torch.tensor(float(s)), x)


def lhs_minimum(s, x):
    return torch.minimum(torch.tensor(float(s)), x)


def rem_pair(shape_a, shape_b):
    """b with |b| in [1, 2]; a = b * (k + f) broadcast, so a / b stays 0.2 from an integer."""
    b = away_from_zero(*shape_b).sign() * (torch.rand(shape_b) + 1.0)
    q = torch.randint(-2, 2, shape_a).float() + torch.rand(shape_a) * 0.6 + 0.2
    return q * b, b


BINARY = {
    "add": (torch.add, rnd, rnd), "sub": (torch.sub, rnd, rnd), "mul": (torch.mul, rnd, rnd),
    "div": (torch.div, rnd, away_from_zero), "pow": (torch.pow, positive, rnd),
    "maximum": (t_maximum, rnd, rnd), "minimum": (t_minimum, rnd, rnd),
    "atan2": (torch.atan2, away_from_zero, away_from_zero),
}
SHAPES = [("same", (2, 3), (2, 3)), ("bcast_row", (2, 3), (3,)), ("bcast_both", (2, 1), (1, 3)),
          ("bcast_0d", (2, 3), ())]

for name, (fn, make_a, make_b) in BINARY.items():
    for label, sa, sb in SHAPES:
        cases.append(grad_case("%s_%s" % (name, label), name, fn, [make_a(*sa), make_b(*sb)]))
for label, sa, sb in SHAPES:
    cases.append(grad_case("remainder_" + label, "remainder", torch.remainder, list(rem_pair(sa, sb))))

# Scalar forms: (op, torch x op s, torch s op x, scalars, input maker for rhs, for lhs).
SCALAR = [
    ("add", lambda x, s: x + s, lambda s, x: s + x, [2.5, 3], rnd, rnd),
    ("sub", lambda x, s: x - s, lambda s, x: s - x, [2.5, -1], rnd, rnd),
    ("mul", lambda x, s: x * s, lambda s, x: s * x, [2.5, -3], rnd, rnd),
    ("div", lambda x, s: x / s, lambda s, x: s / x, [2.5, -4], rnd, away_from_zero),
    ("pow", torch.pow, torch.pow, [2.5, 2, -1.5, 0.5], positive, rnd),
    # torch 1.13 has no derivative for remainder(Scalar, Tensor): the 0-d tensor form is the same math.
    ("remainder", torch.remainder, lambda s, x: torch.remainder(torch.tensor(float(s)), x), [1.5, -2.5], None, None),
    ("maximum", t_maximum, lhs_maximum, [0.25, -1], rnd, rnd),
    ("minimum", t_minimum, lhs_minimum, [0.25, -1], rnd, rnd),
    ("atan2", lambda x, s: torch.atan2(x, torch.tensor(float(s))), lambda s, x: torch.atan2(torch.tensor(float(s)), x), [1.5, -0.5], rnd, away_from_zero),
]
for name, rhs, lhs, scalars, make_rhs, make_lhs in SCALAR:
    for s in scalars:
        tag = str(s).replace("-", "m").replace(".", "p")
        if name == "remainder":
            x_rhs = torch.randint(-3, 3, (2, 3)).float() * abs(s) + (torch.rand(2, 3) * 0.6 + 0.2) * abs(s)
            # s / x stays 0.2 from an integer: x = s / (k + f) with k + f in [1.2, 1.8] or [2.2, 2.8].
            q = torch.randint(1, 3, (2, 3)).float() + torch.rand(2, 3) * 0.6 + 0.2
            x_lhs = s / q * torch.where(torch.rand(2, 3) > 0.5, 1.0, -1.0)
        else:
            x_rhs, x_lhs = make_rhs(2, 3), make_lhs(2, 3)
        cases.append(grad_case("%s_rhs_%s" % (name, tag), name, lambda x: rhs(x, s), [x_rhs],
                               {"scalar": s, "side": "rhs"}))
        lhs_s = abs(s) if name == "pow" else s  # s ** x for a negative s is NaN: its own case below
        cases.append(grad_case("%s_lhs_%s" % (name, tag), name, lambda x: lhs(lhs_s, x), [x_lhs],
                               {"scalar": lhs_s, "side": "lhs"}))

# pow at its edges: exponent 0, base 0, negative base (torch: NaN exponent gradient).
edge_base = torch.tensor([0.0, 0.0, 0.0, -2.0, 2.0])
edge_exp = torch.tensor([0.0, -1.0, 1.0, 2.0, 0.0])
cases.append(grad_case("pow_edges", "pow", torch.pow, [edge_base, edge_exp], fd=False))
cases.append(grad_case("pow_rhs_zero", "pow", lambda x: torch.pow(x, 0), [rnd(2, 3)], {"scalar": 0, "side": "rhs"}))
cases.append(grad_case("pow_lhs_zero", "pow", lambda x: torch.pow(0, x), [torch.tensor([-2.0, 0.0, 1.5])],
                       {"scalar": 0, "side": "lhs"}, fd=False))
cases.append(grad_case("pow_lhs_negative", "pow", lambda x: torch.pow(-2, x), [torch.tensor([2.0, 3.0])],
                       {"scalar": -2, "side": "lhs"}, fd=False))

# Ties: maximum/minimum split the gradient evenly (torch 1.13).
ta = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
tb = torch.tensor([1.0, -1.0, 3.0])
for name, fn in (("maximum", t_maximum), ("minimum", t_minimum)):
    cases.append(grad_case(name + "_ties", name, fn, [ta, tb], fd=False))
    cases.append(grad_case(name + "_rhs_ties", name, lambda x, fn=fn: fn(x, 2), [ta], {"scalar": 2, "side": "rhs"},
                           fd=False))

# Mixed dtypes: the integer operand takes no gradient.
for name in ("add", "mul", "div", "sub"):
    fn = {"add": torch.add, "mul": torch.mul, "div": torch.div, "sub": torch.sub}[name]
    cases.append(grad_case(name + "_i64_f32", name, fn, [i64(2, 3), away_from_zero(3)]))
    cases.append(grad_case(name + "_f32_i64", name, fn, [rnd(2, 3), torch.randint(1, 4, (2, 3))]))

# where(cond, a, b): the condition takes no gradient; a and b broadcast.
cond = torch.rand(2, 3) > 0.5
cases.append(grad_case("where_same", "where", torch.where, [cond, rnd(2, 3), rnd(2, 3)]))
cases.append(grad_case("where_bcast", "where", torch.where, [torch.rand(2, 1) > 0.5, rnd(1, 3), rnd(3)]))
cases.append(grad_case("where_i64_branch", "where", torch.where, [cond, rnd(2, 3), i64(2, 3)]))

# clamp: the gradient passes where min <= x <= max, bounds included.
for label, lo, hi in (("both", -0.5, 0.75), ("min", -0.25, None), ("max", None, 0.5)):
    x = rnd(3, 4)
    x = torch.where((x - (lo if lo is not None else 9)).abs() < 0.05, x + 0.1, x)
    x = torch.where((x - (hi if hi is not None else 9)).abs() < 0.05, x + 0.1, x)
    attrs = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
    cases.append(grad_case("clamp_" + label, "clamp", lambda t, lo=lo, hi=hi: torch.clamp(t, lo, hi), [x], attrs))
cases.append(grad_case("clamp_at_bounds", "clamp", lambda t: torch.clamp(t, -1.0, 1.0),
                       [torch.tensor([-1.0, 1.0, 0.0, -2.0, 2.0, float("nan")])], {"min": -1.0, "max": 1.0}, fd=False))

write("grad_elementwise", cases)
