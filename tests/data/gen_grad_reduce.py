"""Gradient reference data for the reduce family (tests/autograd/test_rules_reduce.cpp).

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_grad_reduce.py
Case layout: gradgen.py. attrs the C++ side reads to call the kiln op:
  dims (list, [] = all dims), keepdim, correction (var/std), dim (cumsum, softmax, log_softmax).

max/min follow torch 1.13 with kiln's dims: over one dim of a tensor with more dims it is
torch.max(x, dim) (the gradient goes to the index of the first extremum); over several or all
dims it is torch.amax / torch.max(x) (the gradient is split evenly among ties).
"""
import torch

from gradgen import grad_case
from refgen import write

torch.manual_seed(0)
cases = []


def all_dims(x, dims):
    return tuple(range(x.dim())) if not dims else tuple(dims)


def t_extremum(largest):
    def fn(x, dims, k, a):
        d = all_dims(x, dims)
        if x.dim() == 0:
            return x.clone()
        if len(d) == 1 and x.dim() > 1:
            return (torch.max if largest else torch.min)(x, d[0], keepdim=k)[0]
        return (torch.amax if largest else torch.amin)(x, d, keepdim=k)
    return fn


def t_prod(x, dims, k, a):
    # torch.prod takes one dim: fold the dims one at a time, highest first.
    d = sorted((v % x.dim() for v in all_dims(x, dims)), reverse=True)
    for v in d:
        x = x.prod(v, keepdim=k)
    return x


REDUCE = {
    "sum": lambda x, d, k, a: x.sum(all_dims(x, d), keepdim=k),
    "mean": lambda x, d, k, a: x.mean(all_dims(x, d), keepdim=k),
    "prod": t_prod,
    "max": t_extremum(True),
    "min": t_extremum(False),
    "var": lambda x, d, k, a: x.var(all_dims(x, d), correction=a.get("correction", 1), keepdim=k),
    "std": lambda x, d, k, a: x.std(all_dims(x, d), correction=a.get("correction", 1), keepdim=k),
    "logsumexp": lambda x, d, k, a: torch.logsumexp(x, all_dims(x, d), keepdim=k),
}

# (label, dims, keepdim) on a [2, 3, 4] input.
DIMS = [("all", [], False), ("all_keep", [], True), ("d1", [1], False), ("d1_keep", [1], True),
        ("dm1", [-1], False), ("d02", [0, 2], False), ("d0m1_keep", [0, -1], True)]


def add(op, name, x, dims, keepdim, fd=True, **extra):
    a = dict(dims=dims, keepdim=keepdim, **extra)
    fn = REDUCE[op]
    cases.append(grad_case(name, op, lambda t: fn(t, dims, keepdim, a), [x], a, fd=fd))


def input_for(op, shape):
    if op == "prod":  # keep products well scaled
        return (torch.rand(shape) * 1.0 + 0.5) * torch.where(torch.rand(shape) > 0.3, 1.0, -1.0)
    if op in ("max", "min"):  # distinct values 0.1 apart: no (near) ties for finite differences
        n = 1
        for d in shape:
            n *= d
        return ((torch.randperm(n).float() - n / 2) * 0.1 + torch.rand(n) * 0.02).reshape(shape)
    return torch.randn(shape)


for op in REDUCE:
    for label, dims, keepdim in DIMS:
        extra = {"correction": 1} if op in ("var", "std") else {}
        add(op, "%s_%s" % (op, label), input_for(op, (2, 3, 4)), dims, keepdim, **extra)
    add(op, op + "_1d", input_for(op, (5,)), [0], False, **({"correction": 1} if op in ("var", "std") else {}))

for op in ("sum", "mean", "prod", "max", "logsumexp"):
    add(op, op + "_0d", torch.randn(()), [], False)

for c in (0, 2):
    for op in ("var", "std"):
        add(op, "%s_correction%d" % (op, c), torch.randn(3, 4), [1], False, correction=c)
# A constant row: std is 0 there and torch's gradient is 0 (not NaN).
add("std", "std_constant_row", torch.tensor([[1.0, 1.0, 1.0], [0.5, -1.0, 2.0]]), [1], False, fd=False)

# prod with zeros: exact like torch (one zero: the product of the others; two zeros: 0). A
# product is linear in each element, so finite differences still hold.
pz = torch.tensor([[1.5, 0.0, -2.0, 0.5], [0.0, 0.0, 1.0, 2.0], [1.0, -0.5, 2.0, 1.5]])
add("prod", "prod_zeros_d1", pz, [1], False)
add("prod", "prod_zeros_d0_keep", pz, [0], True)
add("prod", "prod_zeros_all", pz, [], False)
add("prod", "prod_one_zero_all", torch.tensor([[1.5, 0.0], [-2.0, 0.5]]), [], False)

# max/min ties: one dim -> the first index; several / all dims -> split evenly.
ties = torch.tensor([[[1.0, 3.0], [3.0, 0.0], [2.0, 3.0]], [[0.0, 0.0], [-1.0, 0.0], [0.0, -2.0]]])
for op in ("max", "min"):
    for label, dims, keepdim in (("d1", [1], False), ("dm1_keep", [-1], True), ("all", [], False),
                                 ("d02", [0, 2], True), ("d12", [1, 2], False)):
        add(op, "%s_ties_%s" % (op, label), ties, dims, keepdim, fd=False)
    add(op, op + "_ties_1d", torch.tensor([2.0, -1.0, 2.0, 0.5]) * (1 if op == "max" else -1), [0], False, fd=False)

# cumsum, softmax, log_softmax along one dim.
SCAN = {"cumsum": torch.cumsum, "softmax": torch.softmax, "log_softmax": torch.log_softmax}
for op, fn in SCAN.items():
    for label, shape, dim in (("d0", (3, 4), 0), ("d1", (3, 4), 1), ("dm1", (2, 3, 4), -1), ("d1_3d", (2, 3, 4), 1),
                              ("1d", (5,), 0)):
        cases.append(grad_case("%s_%s" % (op, label), op, lambda t, fn=fn, dim=dim: fn(t, dim), [torch.randn(shape)],
                               {"dim": dim}))
    cases.append(grad_case(op + "_0d", op, lambda t, fn=fn: fn(t, 0), [torch.randn(())], {"dim": 0}))

# Integer inputs take no gradient.
cases.append(grad_case("sum_i64", "sum", lambda t: t.sum(), [torch.randint(-3, 4, (2, 3))], {"dims": [], "keepdim": False}))
cases.append(grad_case("cumsum_i64", "cumsum", lambda t: torch.cumsum(t, 1), [torch.randint(-3, 4, (2, 3))], {"dim": 1}))

write("grad_reduce", cases)
