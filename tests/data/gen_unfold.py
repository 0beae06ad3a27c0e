"""Reference data for unfold and fold (tests/ops/test_unfold.cpp), written to unfold.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_unfold.py
attrs hold the kiln API's arguments: kernel, dilation, padding, stride (one value, or one per
spatial dim), unfold's pad_value and fold's output_size.

torch has F.unfold / F.fold for 2 spatial dims only. The reference here works for 1 to 3: unfold
pads with the value, takes each spatial dim's windows with Tensor.unfold (a window of
dilation * (kernel - 1) + 1 elements, then every dilation-th of them) and moves the kernel dims
before the window dims; fold is unfold's adjoint, computed by unfolding the positions of the
image (-1 in the padding) and adding every column element at its position, in float64. Both are
checked against F.unfold / F.fold on every 2-d case.
"""
import math

import torch
import torch.nn.functional as F

from refgen import case, write

torch.manual_seed(0)


def per_dim(v, s):
    return list(v) * s if len(v) == 1 else list(v)


def unfold_ref(x, kernel, dilation, padding, stride, pad_value=0.0):
    s = x.dim() - 2
    k, d, p, st = (per_dim(v, s) for v in (kernel, dilation, padding, stride))
    pads = []
    for i in reversed(range(s)):
        pads += [p[i], p[i]]
    # F.pad takes no bool tensors: pad their bytes.
    xp = F.pad(x.to(torch.uint8) if x.dtype == torch.bool else x, pads, value=pad_value)
    xp = xp.to(x.dtype)
    for i in range(s):
        span = d[i] * (k[i] - 1) + 1
        xp = xp.unfold(2 + i, span, st[i])[..., ::d[i]]
    # [N, C, o_0.., k_0..] -> [N, C, k_0.., o_0..] -> [N, C * K, L]
    xp = xp.permute(0, 1, *range(2 + s, 2 + 2 * s), *range(2, 2 + s))
    n, c = x.shape[:2]
    return xp.reshape(n, c * math.prod(k), math.prod(xp.shape[2 + s:]))


def fold_ref(cols, output_size, kernel, dilation, padding, stride):
    s = len(output_size)
    k = per_dim(kernel, s)
    n, ck, length = cols.shape
    c = ck // math.prod(k)
    plane = math.prod(output_size)
    positions = torch.arange(plane, dtype=torch.float64).reshape(1, 1, *output_size)
    where = unfold_ref(positions, kernel, dilation, padding, stride, -1.0)[0].long()  # [K, L]
    assert where.shape[1] == length
    out = torch.zeros(n, c, plane + 1, dtype=torch.float64)
    index = torch.where(where < 0, plane, where).reshape(-1)  # the padding adds into a spare slot
    out.index_add_(2, index, cols.double().reshape(n, c, ck // c * length))
    return out[..., :plane].reshape(n, c, *output_size)


def small_ints(*shape, lo=-9, hi=10):
    """Integers as floats: short JSON, exact in every dtype, sums exact in f32."""
    return torch.randint(lo, hi, shape).float()


def quarters(*shape):
    """Multiples of 1/4 in [-10, 10]: short JSON, exact in f32, f16 and bf16."""
    return torch.randint(-40, 41, shape).float() / 4


cases = []


def window_attrs(kernel, dilation, padding, stride):
    return {"kernel": list(kernel), "dilation": list(dilation), "padding": list(padding), "stride": list(stride)}


def unfold_case(name, x, kernel, dilation=(1,), padding=(0,), stride=(1,), pad_value=0.0):
    y = unfold_ref(x, kernel, dilation, padding, stride, pad_value)
    if x.dim() == 4 and x.dtype == torch.float32 and pad_value == 0.0 and x.shape[1] > 0:
        pairs = [tuple(per_dim(v, 2)) for v in (kernel, dilation, padding, stride)]
        assert torch.equal(y, F.unfold(x, *pairs)), name
    attrs = window_attrs(kernel, dilation, padding, stride)
    attrs["pad_value"] = pad_value if math.isfinite(pad_value) else ("-inf" if pad_value < 0 else "inf")
    cases.append(case(name, "unfold", [x], [y], attrs))


def fold_case(name, output_size, c, kernel, dilation=(1,), padding=(0,), stride=(1,), n=2, dtype=torch.float32,
              magnitude=9):
    s = len(output_size)
    k = per_dim(kernel, s)
    probe = unfold_ref(torch.zeros(1, 1, *output_size), kernel, dilation, padding, stride)
    cols = small_ints(n, c * math.prod(k), probe.shape[2], lo=-magnitude, hi=magnitude + 1)
    y = fold_ref(cols, output_size, kernel, dilation, padding, stride)
    if s == 2:
        torch_y = F.fold(cols, output_size, *[tuple(per_dim(v, 2)) for v in (kernel, dilation, padding, stride)])
        assert torch.allclose(y.float(), torch_y), name
    # 16-bit columns: integers up to 256, exact in both; their sums are exact in f32, and the
    # reference rounds them once to the dtype, as kiln must (PyTorch's CUDA fold does the same).
    cases.append(case(name, "fold", [cols.to(dtype)], [y.to(dtype)],
                      dict(window_attrs(kernel, dilation, padding, stride), output_size=list(output_size))))



def main():
    # ---- unfold, 2 spatial dims ----------------------------------------------------------------------
    unfold_case("unfold_2d_conv3x3", quarters(2, 3, 5, 6), (3,), padding=(1,))
    unfold_case("unfold_2d_stride_pad", quarters(1, 2, 7, 8), (3, 2), padding=(1, 0), stride=(2, 3))
    unfold_case("unfold_2d_dilation", quarters(2, 2, 9, 7), (3,), dilation=(2, 3), padding=(2, 1), stride=(1, 2))
    unfold_case("unfold_2d_kernel1", quarters(2, 4, 3, 3), (1,))
    unfold_case("unfold_2d_whole_image", quarters(1, 2, 4, 5), (4, 5))
    unfold_case("unfold_2d_one_pixel", quarters(2, 3, 1, 1), (1,))
    unfold_case("unfold_2d_one_pixel_padded", quarters(1, 2, 1, 1), (3,), padding=(1,))
    unfold_case("unfold_2d_windows_in_padding", quarters(1, 1, 2, 3), (2,), padding=(3,), stride=(2,))
    unfold_case("unfold_2d_odd", quarters(3, 1, 7, 5), (2, 3), padding=(0, 1), stride=(3, 2))
    unfold_case("unfold_2d_stride_over_kernel", quarters(1, 2, 9, 10), (2,), stride=(4, 3), padding=(1,))
    unfold_case("unfold_2d_pool_neg_inf", quarters(2, 2, 5, 4), (3,), padding=(1,), stride=(2,), pad_value=-math.inf)
    unfold_case("unfold_2d_pad_value", quarters(1, 2, 3, 4), (2, 3), padding=(1, 2), pad_value=2.5)
    unfold_case("unfold_2d_empty_batch", quarters(0, 3, 5, 5), (3,), padding=(1,))
    unfold_case("unfold_2d_no_channels", quarters(2, 0, 4, 4), (2,))
    # Big enough for the CPU kernel to split the rows between threads (and more than one workgroup).
    unfold_case("unfold_2d_parallel", small_ints(1, 10, 20, 21), (3,), padding=(1,))
    unfold_case("unfold_2d_strided_dilated", small_ints(1, 3, 33, 30), (3, 2), padding=(1, 2), stride=(2, 3),
                dilation=(1, 2))

    # ---- unfold, 1 and 3 spatial dims -------------------------------------------------------------------
    unfold_case("unfold_1d_dilation", quarters(2, 3, 10), (3,), dilation=(2,), padding=(2,))
    unfold_case("unfold_1d_stride", quarters(1, 2, 7), (4,), padding=(1,), stride=(3,))
    unfold_case("unfold_1d_one_pixel", quarters(2, 1, 1), (1,))
    unfold_case("unfold_1d_neg_inf", quarters(1, 3, 6), (2,), padding=(1,), stride=(2,), pad_value=-math.inf)
    unfold_case("unfold_1d_empty_batch", quarters(0, 2, 6), (3,))
    unfold_case("unfold_3d_mixed", quarters(2, 2, 4, 5, 6), (2, 3, 2), dilation=(1, 1, 2), padding=(1, 0, 1),
                stride=(2, 1, 1))
    unfold_case("unfold_3d_cube", quarters(1, 3, 3, 3, 3), (3,), padding=(1,))
    unfold_case("unfold_3d_pool_neg_inf", quarters(1, 1, 5, 4, 6), (2,), padding=(1,), stride=(2,),
                pad_value=-math.inf)
    unfold_case("unfold_3d_one_voxel", quarters(2, 2, 1, 1, 1), (1,))
    unfold_case("unfold_3d_thin", quarters(1, 2, 1, 6, 5), (1, 3, 2), stride=(1, 2, 1), padding=(0, 1, 0))
    unfold_case("unfold_3d_empty_batch", quarters(0, 2, 3, 3, 3), (2,))

    # ---- unfold of integers and bools: moved as they are ---------------------------------------------------
    unfold_case("unfold_2d_i64", torch.randint(-50, 50, (2, 3, 5, 5)), (2,), padding=(1,), pad_value=-7)
    unfold_case("unfold_3d_i64", torch.randint(-50, 50, (1, 2, 3, 4, 3)), (2, 2, 1), stride=(1, 2, 1),
                padding=(1, 0, 0))
    unfold_case("unfold_1d_i64_no_padding", torch.randint(-50, 50, (2, 2, 7)), (3,), stride=(2,))
    unfold_case("unfold_2d_bool", torch.rand(1, 2, 4, 4) > 0.5, (2,), padding=(1,), pad_value=1.0)

    # ---- fold ---------------------------------------------------------------------------------------------
    fold_case("fold_2d_conv3x3", (5, 6), 3, (3,), padding=(1,))
    fold_case("fold_2d_stride_pad", (7, 8), 2, (3, 2), padding=(1, 0), stride=(2, 3))
    fold_case("fold_2d_dilation", (9, 7), 2, (3,), dilation=(2, 3), padding=(2, 1), stride=(1, 2))
    fold_case("fold_2d_kernel1", (3, 3), 4, (1,))
    fold_case("fold_2d_whole_image", (4, 5), 2, (4, 5), n=1)
    fold_case("fold_2d_one_pixel", (1, 1), 3, (1,))
    fold_case("fold_2d_one_pixel_padded", (1, 1), 2, (3,), padding=(1,), n=1)
    fold_case("fold_2d_windows_in_padding", (2, 3), 1, (2,), padding=(3,), stride=(2,), n=1)
    fold_case("fold_2d_gaps", (9, 10), 2, (2,), stride=(4, 3), padding=(1,), n=1)
    fold_case("fold_2d_empty_batch", (5, 5), 3, (3,), padding=(1,), n=0)
    fold_case("fold_2d_parallel", (20, 21), 10, (3,), padding=(1,), n=1)
    fold_case("fold_2d_strided_dilated", (33, 30), 3, (3, 2), padding=(1, 2), stride=(2, 3), dilation=(1, 2), n=1)
    fold_case("fold_1d_dilation", (10,), 3, (3,), dilation=(2,), padding=(2,))
    fold_case("fold_1d_stride", (7,), 2, (4,), padding=(1,), stride=(3,), n=1)
    fold_case("fold_1d_one_pixel", (1,), 1, (1,))
    fold_case("fold_3d_mixed", (4, 5, 6), 2, (2, 3, 2), dilation=(1, 1, 2), padding=(1, 0, 1), stride=(2, 1, 1))
    fold_case("fold_3d_cube", (3, 3, 3), 3, (3,), padding=(1,), n=1)
    fold_case("fold_3d_one_voxel", (1, 1, 1), 2, (1,))
    fold_case("fold_3d_empty_batch", (3, 3, 3), 2, (2,), n=0)

    # ---- 16-bit floats (Vulkan devices with 16-bit storage) -----------------------------------------------
    for dt, tag in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        unfold_case("unfold_2d_" + tag, quarters(2, 3, 5, 6).to(dt), (3,), padding=(1,), stride=(1, 2))
        unfold_case("unfold_2d_neg_inf_" + tag, quarters(1, 2, 5, 4).to(dt), (3,), padding=(1,), stride=(2,),
                    pad_value=-math.inf)
        fold_case("fold_2d_" + tag, (5, 6), 3, (3,), padding=(1,), dtype=dt)
        fold_case("fold_3d_" + tag, (4, 5, 6), 2, (2, 3, 2), dilation=(1, 1, 2), padding=(1, 0, 1), dtype=dt)
        fold_case("fold_1d_rounded_sums_" + tag, (40,), 2, (9,), padding=(4,), dtype=dt, magnitude=250)

    # ---- rows of a multiple of 4 windows (the Vulkan kernels' vector stores), every element size ---------
    unfold_case("unfold_2d_rows_of_4", quarters(2, 3, 4, 6), (3,), padding=(1,))
    unfold_case("unfold_2d_bool_rows_of_4", torch.rand(1, 2, 4, 4) > 0.5, (3,), padding=(1,))
    unfold_case("unfold_2d_i64_rows_of_4", torch.randint(-50, 50, (1, 2, 4, 4)), (3,), padding=(1,), pad_value=-1)
    fold_case("fold_2d_rows_of_4", (5, 8), 2, (3,), padding=(1,))
    for dt, tag in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        unfold_case("unfold_2d_rows_of_4_" + tag, quarters(2, 3, 4, 6).to(dt), (3,), padding=(1,), pad_value=-math.inf)

    write("unfold", cases)


if __name__ == "__main__":
    main()
