"""Reference data for the reduce family (tests/ops/test_reduce.cpp).

Run with Debian's python3-torch: /usr/bin/python3 tests/data/gen_reduce.py

attrs of a case, read by the test to call the kiln op:
  dims (list, [] = all dims), keepdim, correction (var/std), dim (argmax/argmin along a dim,
  cumsum, softmax, log_softmax; argmax/argmin without dim reduce the flattened input).
Large inputs are not stored: a case with attrs.ramp = shape has no inputs, and its input is
ramp(shape) below, which the test rebuilds bit for bit (integers / 64 are exact in f32), with NaN
written at the flat positions attrs.nan_at when present.
"""
import torch

from refgen import case, write

torch.manual_seed(0)
NAN, INF = float("nan"), float("inf")
cases = []


def ramp(shape, nan_at=()):
    n = 1
    for d in shape:
        n *= d
    i = torch.arange(n, dtype=torch.int64)
    x = ((i * 7919) % 2001 - 1000).to(torch.float32) / 64
    for k in nan_at:
        x[k] = NAN
    return x.reshape(shape)


def rnd(*shape):
    return torch.randn(*shape)


def ints(*shape):
    return torch.randint(-5, 6, shape, dtype=torch.int64)


def bools(*shape):
    return torch.rand(*shape) > 0.5


def all_dims(x, dims):
    return tuple(range(x.dim())) if not dims else tuple(dims)


# op name -> torch function of (x, dims, keepdim, attrs)
def t_sum(x, dims, k, a):
    return x.sum(all_dims(x, dims), keepdim=k) if x.dim() else x.sum()


def t_mean(x, dims, k, a):
    return x.mean(all_dims(x, dims), keepdim=k) if x.dim() else x.mean()


def t_prod(x, dims, k, a):
    # torch.prod takes one dim: fold the dims one at a time, highest first.
    if x.dim() == 0:
        return x.prod()
    r = x
    for d in sorted([d % x.dim() for d in all_dims(x, dims)], reverse=True):
        r = r.prod(d, keepdim=k)
    return r


def t_max(x, dims, k, a):
    return torch.amax(x, all_dims(x, dims), keepdim=k)


def t_min(x, dims, k, a):
    return torch.amin(x, all_dims(x, dims), keepdim=k)


def t_var(x, dims, k, a):
    return torch.var(x, all_dims(x, dims), correction=a.get("correction", 1), keepdim=k)


def t_std(x, dims, k, a):
    return torch.std(x, all_dims(x, dims), correction=a.get("correction", 1), keepdim=k)


def t_any(x, dims, k, a):
    r = x
    if x.dim() == 0:
        return x.any()
    for d in sorted([d % x.dim() for d in all_dims(x, dims)], reverse=True):
        r = r.any(d, keepdim=k)
    return r


def t_all(x, dims, k, a):
    r = x
    if x.dim() == 0:
        return x.all()
    for d in sorted([d % x.dim() for d in all_dims(x, dims)], reverse=True):
        r = r.all(d, keepdim=k)
    return r


def t_logsumexp(x, dims, k, a):
    return torch.logsumexp(x, all_dims(x, dims) if x.dim() else (), keepdim=k)


DIMS_OPS = {"sum": t_sum, "mean": t_mean, "prod": t_prod, "max": t_max, "min": t_min, "var": t_var,
            "std": t_std, "any": t_any, "all": t_all, "logsumexp": t_logsumexp}


def dims_case(name, op, x, dims=(), keepdim=False, stored=True, nan_at=(), **extra):
    attrs = {"dims": list(dims), "keepdim": keepdim}
    attrs.update(extra)
    out = DIMS_OPS[op](x, list(dims), keepdim, attrs)
    if stored:
        cases.append(case(name, op, [x], out, attrs))
    else:
        assert torch.equal(x.nan_to_num(), ramp(list(x.shape), nan_at).nan_to_num())
        attrs["ramp"] = list(x.shape)
        if nan_at:
            attrs["nan_at"] = list(nan_at)
        cases.append(case(name, op, [], out, attrs))


def along_case(name, op, x, dim=None, keepdim=False, stored=True, nan_at=()):
    attrs = {}
    if op in ("argmax", "argmin"):
        f = torch.argmax if op == "argmax" else torch.argmin
        out = f(x) if dim is None else f(x, dim, keepdim=keepdim)
        if dim is not None:
            attrs = {"dim": dim, "keepdim": keepdim}
    else:
        f = {"cumsum": torch.cumsum, "softmax": torch.softmax, "log_softmax": torch.log_softmax}[op]
        out = f(x, dim)
        attrs = {"dim": dim}
    if stored:
        cases.append(case(name, op, [x], out, attrs))
    else:
        assert torch.equal(x.nan_to_num(), ramp(list(x.shape), nan_at).nan_to_num())
        attrs["ramp"] = list(x.shape)
        if nan_at:
            attrs["nan_at"] = list(nan_at)
        cases.append(case(name, op, [], out, attrs))


FLOAT_DIMS_OPS = ["sum", "mean", "prod", "max", "min", "var", "std", "any", "all", "logsumexp"]
for op in FLOAT_DIMS_OPS:
    x3 = rnd(2, 3, 4)
    dims_case(op + "_all", op, x3)
    dims_case(op + "_all_keepdim", op, x3, keepdim=True)
    dims_case(op + "_dim0", op, x3, [0])
    dims_case(op + "_dim_last", op, x3, [2])
    dims_case(op + "_dim_neg_keepdim", op, x3, [-2], keepdim=True)
    dims_case(op + "_adjacent", op, x3, [1, 2])
    dims_case(op + "_adjacent_unsorted_neg", op, x3, [-1, 0, 1], keepdim=True)
    dims_case(op + "_nonadjacent", op, x3, [0, 2])
    dims_case(op + "_nonadjacent_keepdim", op, rnd(2, 3, 2, 5), [0, 2], keepdim=True)
    dims_case(op + "_nonadjacent_4d", op, rnd(3, 2, 4, 3), [1, 3])
    dims_case(op + "_size1_dims", op, rnd(3, 1, 4), [0, 2])
    dims_case(op + "_zero_d", op, torch.tensor(1.5))
    dims_case(op + "_zero_d_dim0", op, torch.tensor(-0.5), [0])
    dims_case(op + "_zero_d_neg_keepdim", op, torch.tensor(2.0), [-1], keepdim=True)
    dims_case(op + "_rows_3x1000", op, ramp([3, 1000]), [1], stored=False)
    dims_case(op + "_cols_1000x3", op, ramp([1000, 3]), [0], stored=False)
    dims_case(op + "_cols_3x37x40", op, ramp([3, 37, 40]), [1], stored=False)
    dims_case(op + "_empty_kept", op, torch.zeros(0, 3), [1])
    if op not in ("max", "min"):
        dims_case(op + "_empty_reduced", op, torch.zeros(0, 3), [0])
        dims_case(op + "_empty_all", op, torch.zeros(2, 0))

# Long rows and long reduced extents: several fixed blocks merged in order.
for op in ["sum", "mean", "max", "min", "var", "std", "logsumexp", "any", "all"]:
    dims_case(op + "_long_rows", op, ramp([2, 40000]), [1], stored=False)
    dims_case(op + "_long_all", op, ramp([40000]), stored=False)
    dims_case(op + "_long_cols", op, ramp([1300, 5]), [0], stored=False)
    dims_case(op + "_long_cols_nonadjacent", op, ramp([700, 3, 2]), [0, 2], stored=False)

# Integer and bool inputs.
for op in ["sum", "prod", "max", "min", "any", "all", "logsumexp"]:
    dims_case(op + "_i64_all", op, ints(3, 4))
    dims_case(op + "_i64_dim1", op, ints(3, 4), [1], keepdim=True)
    dims_case(op + "_i64_nonadjacent", op, ints(2, 3, 4), [0, 2])
    dims_case(op + "_bool_all", op, bools(3, 4))
    dims_case(op + "_bool_dim0", op, bools(3, 4), [0])
    dims_case(op + "_i64_rows_3x100", op, ints(3, 100), [1])
dims_case("sum_i64_empty", "sum", torch.zeros(0, 2, dtype=torch.int64), [0])
dims_case("prod_bool_empty", "prod", torch.zeros(0, dtype=torch.bool))
dims_case("any_i64_cols", "any", torch.tensor([[0, 0, 3], [0, 0, 0]]), [0])
dims_case("all_f32_nan_is_true", "all", torch.tensor([NAN, 1.0, -2.0]))
dims_case("any_f32_nan_is_true", "any", torch.tensor([0.0, NAN, 0.0]))

# Non-finite values.
nan_row = torch.tensor([[1.0, NAN, 3.0, -1.0], [2.0, 5.0, -INF, 0.5]])
for op in ["sum", "mean", "prod", "max", "min", "var", "logsumexp"]:
    dims_case(op + "_nan_rows", op, nan_row, [1])
    dims_case(op + "_nan_cols", op, nan_row, [0])
long_nan = ramp([2, 300], [217])
dims_case("max_nan_in_vector_body", "max", long_nan, [1], stored=False, nan_at=[217])
dims_case("min_nan_in_vector_body", "min", long_nan, [1], stored=False, nan_at=[217])
dims_case("sum_inf_minus_inf", "sum", torch.tensor([INF, -INF, 1.0]))
dims_case("logsumexp_inf", "logsumexp", torch.tensor([[INF, 1.0], [INF, INF], [-INF, -INF], [-INF, 2.0]]), [1])
dims_case("logsumexp_large", "logsumexp", torch.tensor([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -999.0]]), [1])
for corr in [0, 2, 5]:
    dims_case("var_correction_%d" % corr, "var", rnd(3, 4), [1], correction=corr)
    dims_case("std_correction_%d" % corr, "std", rnd(3, 4), [0], keepdim=True, correction=corr)
dims_case("var_offset_mean", "var", rnd(4, 50) + 1000.0, [1])
dims_case("var_zero_d_correction_0", "var", torch.tensor(3.0), correction=0)

# argmax / argmin
ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
nan_args = torch.tensor([[1.0, NAN, 5.0, NAN], [-INF, 2.0, -INF, 7.0]])
for op in ["argmax", "argmin"]:
    x3 = rnd(3, 4, 5)
    along_case(op + "_flat", op, x3)
    along_case(op + "_dim0", op, x3, 0)
    along_case(op + "_dim1_keepdim", op, x3, 1, keepdim=True)
    along_case(op + "_dim_neg", op, x3, -1)
    along_case(op + "_ties_rows", op, ties, 1)
    along_case(op + "_ties_cols", op, ties, 0)
    along_case(op + "_ties_flat", op, ties)
    along_case(op + "_nan_rows", op, nan_args, 1)
    along_case(op + "_nan_cols", op, nan_args, 0)
    along_case(op + "_nan_flat", op, nan_args)
    along_case(op + "_i64", op, ints(4, 6), 1)
    along_case(op + "_i64_flat", op, ints(4, 6))
    along_case(op + "_zero_d", op, torch.tensor(2.0))
    along_case(op + "_zero_d_dim", op, torch.tensor(2.0), 0, keepdim=True)
    along_case(op + "_empty_kept", op, torch.zeros(0, 3), 1)
    along_case(op + "_rows_3x1000", op, ramp([3, 1000]), 1, stored=False)
    along_case(op + "_cols_1000x3", op, ramp([1000, 3]), 0, stored=False)
    along_case(op + "_long_flat", op, ramp([40000]), stored=False)
    along_case(op + "_long_rows", op, ramp([2, 40000]), 1, stored=False)
along_case("argmax_long_nan", "argmax", ramp([40000], [30001, 35000]), stored=False, nan_at=[30001, 35000])
along_case("argmin_long_nan", "argmin", ramp([2, 40000], [20100, 45000]), 1, stored=False, nan_at=[20100, 45000])
big_nan = ramp([3, 100], [177])
along_case("argmax_nan_in_vector_body", "argmax", big_nan, 1, stored=False, nan_at=[177])
along_case("argmin_nan_in_vector_body", "argmin", big_nan, 1, stored=False, nan_at=[177])

# cumsum
for dt, name in [(torch.float32, "f32"), (torch.int64, "i64"), (torch.bool, "bool")]:
    src = rnd(3, 4, 5) if dt == torch.float32 else (ints(3, 4, 5) if dt == torch.int64 else bools(3, 4, 5))
    along_case("cumsum_%s_dim0" % name, "cumsum", src, 0)
    along_case("cumsum_%s_dim1" % name, "cumsum", src, 1)
    along_case("cumsum_%s_dim_neg" % name, "cumsum", src, -1)
along_case("cumsum_zero_d", "cumsum", torch.tensor(4.0), 0)
along_case("cumsum_empty", "cumsum", torch.zeros(0, 3), 0)
along_case("cumsum_empty_dim1", "cumsum", torch.zeros(0, 3), 1)
along_case("cumsum_nan", "cumsum", torch.tensor([1.0, NAN, 2.0, INF]), 0)
along_case("cumsum_rows_3x200", "cumsum", ramp([3, 200]), 1, stored=False)
along_case("cumsum_cols_200x3", "cumsum", ramp([200, 3]), 0, stored=False)

# softmax / log_softmax
for op in ["softmax", "log_softmax"]:
    x3 = rnd(2, 3, 4)
    along_case(op + "_last", op, x3, -1)
    along_case(op + "_dim0", op, x3, 0)
    along_case(op + "_middle", op, x3, 1)
    along_case(op + "_zero_d", op, torch.tensor(0.7), 0)
    along_case(op + "_empty", op, torch.zeros(0, 3), 1)
    along_case(op + "_empty_dim0", op, torch.zeros(0, 3), 0)
    along_case(op + "_large_values", op, torch.tensor([[1000.0, 999.0, 998.0], [-1000.0, -1002.0, -1001.0]]), 1)
    along_case(op + "_inf", op, torch.tensor([[-INF, 1.0, 2.0], [-INF, -INF, -INF], [INF, 1.0, 0.0]]), 1)
    along_case(op + "_nan", op, torch.tensor([[1.0, NAN, 2.0], [0.0, 1.0, 2.0]]), 1)
    along_case(op + "_rows_3x300", op, ramp([3, 300]), 1, stored=False)
    along_case(op + "_cols_130x4", op, ramp([130, 4]), 0, stored=False)
    # Rows long enough for the Vulkan one-workgroup-per-row kernels, with every special value.
    special_rows = ramp([4, 256])
    special_rows[0, 5] = INF
    special_rows[1, :] = -INF
    special_rows[2, 7] = -INF
    special_rows[3, 100] = NAN
    along_case(op + "_rows_specials_4x256", op, special_rows, 1)
    along_case(op + "_rows_1x2100", op, ramp([1, 2100]), 1, stored=False)
along_case("softmax_rows_ramp_3x1000", "softmax", ramp([3, 1000]), 1, stored=False)


# Outputs big enough (9 MiB) for the CPU's streamed-store path, too big to commit whole: the
# input is the ramp, the reference holds only the listed rows of the output.
def sampled_rows_case(name, op, shape, rows):
    f = {"softmax": torch.softmax, "log_softmax": torch.log_softmax}[op]
    out = f(ramp(shape), 1)[rows]
    cases.append(case(name, op, [], out, {"dim": 1, "ramp": shape, "rows": rows}))


for op in ["softmax", "log_softmax"]:
    sampled_rows_case(op + "_rows_streamed_2304x1024", op, [2304, 1024], [0, 1, 777, 2303])

write("reduce", cases)
