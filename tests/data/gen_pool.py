"""Reference values and gradients of max and average pooling (engine/pool.h: the max_pool and
avg_pool ops and their gradient ops), written to pool.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_pool.py
Each case: inputs [x, seed], outputs [values, (indices: max pooling), dx], dx torch's gradient of
x for the seed. The attrs are gen_conv.py's (the kiln options by their C++ names), plus "fd":
whether finite differences hold (no ties, NaN or infinities in a window). Inputs are multiples
of 1/8 (distinct ones where "fd" is set), so sums are exact in f32.

The cases cover what the kernels branch on: kernel 2 and 3, stride 1 and 2 (and 3), padding,
dilation, ceil_mode with and without an overhanging last window, count_include_pad on and off,
1-D and 2-D, unbatched and empty inputs, overlapping windows (whose gradients add up), rows
longer than a vector (stride 1 and 2: the CPU's vector passes and their tails), ties (the first
maximum wins), NaN (it propagates; the last NaN of a window is the index, as torch's kernels
choose) and -inf (padding never wins; a window of -inf names its first element inside the input).
"""
import torch

from gen_conv import distinct, torch_call
from refgen import case, write

torch.manual_seed(7)
cases = []


def add(name, op, x, fd=True, **attrs):
    leaf = x.detach().clone().requires_grad_(True)
    out = torch_call(op, attrs, [leaf])
    values = out[0] if isinstance(out, tuple) else out
    seed = torch.randint(-8, 9, values.shape).float() / 8
    (dx,) = torch.autograd.grad(values, [leaf], seed)
    outputs = list(out) if isinstance(out, tuple) else [out]
    cases.append(case(name, op, [x, seed], outputs + [dx], dict(attrs, fd=fd)))


def few(*shape, levels=3):
    """Multiples of 1/8 from a few levels: windows with ties."""
    return torch.randint(0, levels, shape).float() / 8


# ---- max pooling ----
add("max1d_k2_s1_overlap", "max_pool1d", distinct(2, 3, 9), kernel=[2], stride=[1])
add("max1d_k3_s2_p1", "max_pool1d", distinct(2, 2, 11), kernel=[3], stride=[2], padding=[1])
add("max1d_k3_dilation_ceil", "max_pool1d", distinct(1, 2, 12), kernel=[3], stride=[2], padding=[1], dilation=[2],
    ceil_mode=True)
add("max1d_k2_s2_ceil_overhang", "max_pool1d", distinct(2, 2, 9), kernel=[2], stride=[2], ceil_mode=True)
add("max1d_unbatched", "max_pool1d", distinct(3, 8), kernel=[3], stride=[1], padding=[1])
add("max1d_long_rows_s1", "max_pool1d", distinct(2, 3, 70), kernel=[3], stride=[1], padding=[1])
add("max1d_long_rows_s2", "max_pool1d", distinct(2, 3, 71), kernel=[3], stride=[2], padding=[1])
add("max2d_k3_s2_p1", "max_pool2d", distinct(2, 3, 9, 10), kernel=[3], stride=[2], padding=[1])
add("max2d_k2_s2", "max_pool2d", distinct(2, 2, 6, 8), kernel=[2])
add("max2d_k3_s1_p1_overlap", "max_pool2d", distinct(1, 2, 6, 7), kernel=[3], stride=[1], padding=[1])
add("max2d_rect_dilation_ceil", "max_pool2d", distinct(2, 2, 9, 8), kernel=[3, 2], stride=[1, 2], padding=[1, 0],
    dilation=[2, 1], ceil_mode=True)
add("max2d_k2_s3_ceil", "max_pool2d", distinct(1, 2, 8, 10), kernel=[2], stride=[3], ceil_mode=True)
add("max2d_k3_s2_ceil_pad", "max_pool2d", distinct(1, 2, 8, 8), kernel=[3], stride=[2], padding=[1], ceil_mode=True)
add("max2d_unbatched", "max_pool2d", distinct(3, 7, 6), kernel=[3], stride=[2], padding=[1])
add("max2d_long_rows_s1", "max_pool2d", distinct(1, 2, 4, 67), kernel=[3], stride=[1], padding=[1])
add("max2d_long_rows_s2", "max_pool2d", distinct(1, 2, 5, 75), kernel=[3], stride=[2], padding=[1])
add("max2d_empty_batch", "max_pool2d", distinct(0, 2, 5, 5), kernel=[2])
# Ties: the first maximum of a window (rows, then columns) is chosen and takes the gradient.
add("max2d_ties_overlap", "max_pool2d", few(2, 2, 7, 9), False, kernel=[3], stride=[1], padding=[1])
add("max2d_ties_s2", "max_pool2d", few(1, 3, 8, 40, levels=2), False, kernel=[3], stride=[2], padding=[1])
add("max1d_ties", "max_pool1d", few(2, 2, 37, levels=2), False, kernel=[3], stride=[1])
# NaN propagates; with two in a window the later one is the index (torch's `val > max || isnan`).
nan = float("nan")
x = distinct(1, 2, 6, 6)
x[0, 0, 1, 1] = nan
x[0, 0, 1, 2] = nan
x[0, 1, 4, 0] = nan
x[0, 1, 5, 5] = nan
add("max2d_nan", "max_pool2d", x, False, kernel=[3], stride=[1], padding=[1])
add("max2d_nan_s2", "max_pool2d", x, False, kernel=[3], stride=[2], padding=[1])
x = distinct(2, 1, 40)
x[0, 0, 3] = nan
x[0, 0, 4] = nan
x[1, 0, 20] = nan
add("max1d_nan_long_row", "max_pool1d", x, False, kernel=[3], stride=[1], padding=[1])
# -inf: padding never wins; a window of -inf only names its first element inside the input.
inf = float("inf")
x = distinct(1, 2, 5, 6)
x[0, 0, :2, :] = -inf
x[0, 1, :, :] = -inf
add("max2d_minus_inf", "max_pool2d", x, False, kernel=[3], stride=[2], padding=[1])
add("max2d_minus_inf_dilation", "max_pool2d", x, False, kernel=[2], stride=[1], padding=[1], dilation=[2])
add("max1d_minus_inf", "max_pool1d", torch.full((1, 1, 20), -inf), False, kernel=[3], stride=[2], padding=[1],
    ceil_mode=True)

# ---- average pooling ----
add("avg1d_k3_s2_p1", "avg_pool1d", distinct(2, 3, 11), kernel=[3], stride=[2], padding=[1])
add("avg1d_k3_s2_p1_exclude", "avg_pool1d", distinct(2, 3, 11), kernel=[3], stride=[2], padding=[1],
    count_include_pad=False)
add("avg1d_k2_s1_overlap", "avg_pool1d", distinct(1, 2, 9), kernel=[2], stride=[1])
add("avg1d_ceil_overhang", "avg_pool1d", distinct(1, 2, 10), kernel=[3], stride=[2], padding=[1], ceil_mode=True)
add("avg1d_ceil_overhang_exclude", "avg_pool1d", distinct(1, 2, 10), kernel=[3], stride=[2], padding=[1],
    ceil_mode=True, count_include_pad=False)
add("avg1d_unbatched", "avg_pool1d", distinct(3, 7), kernel=[2], stride=[2], ceil_mode=True)
add("avg1d_long_rows_s1", "avg_pool1d", distinct(2, 2, 70), kernel=[3], stride=[1], padding=[1])
add("avg1d_long_rows_s2", "avg_pool1d", distinct(2, 2, 73), kernel=[3], stride=[2], padding=[1],
    count_include_pad=False)
add("avg2d_k3_s2_p1", "avg_pool2d", distinct(2, 2, 7, 8), kernel=[3], stride=[2], padding=[1])
add("avg2d_k3_s2_p1_exclude", "avg_pool2d", distinct(2, 2, 7, 8), kernel=[3], stride=[2], padding=[1],
    count_include_pad=False)
add("avg2d_k2_s2", "avg_pool2d", distinct(1, 3, 6, 6), kernel=[2])
add("avg2d_k3_s1_p1_overlap", "avg_pool2d", distinct(1, 2, 6, 5), kernel=[3], stride=[1], padding=[1])
add("avg2d_rect_ceil", "avg_pool2d", distinct(1, 2, 8, 7), kernel=[3, 4], stride=[2, 3], padding=[1, 2],
    ceil_mode=True)
add("avg2d_rect_ceil_exclude", "avg_pool2d", distinct(1, 2, 8, 7), kernel=[3, 4], stride=[2, 3], padding=[1, 2],
    ceil_mode=True, count_include_pad=False)
add("avg2d_unbatched", "avg_pool2d", distinct(2, 5, 5), kernel=[3], stride=[2], padding=[1], count_include_pad=False)
add("avg2d_long_rows_s1", "avg_pool2d", distinct(1, 2, 3, 66), kernel=[2], stride=[1])
add("avg2d_long_rows_s2", "avg_pool2d", distinct(1, 2, 4, 77), kernel=[3], stride=[2], padding=[1])
add("avg2d_empty_batch", "avg_pool2d", distinct(0, 2, 4, 4), kernel=[2])
x = distinct(1, 2, 5, 5)
x[0, 0, 2, 2] = nan
x[0, 1, 0, 0] = -inf
add("avg2d_nan_inf", "avg_pool2d", x, False, kernel=[2], stride=[1])

write("pool", cases)
