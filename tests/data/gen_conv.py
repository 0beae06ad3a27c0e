"""Reference data for convolution, pooling and interpolation (engine/conv.h, engine/pool.h,
engine/interpolate.h), written to conv.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_conv.py
Each case's attrs are the kiln options by their C++ names (windows as lists); the inputs are x,
then the weight and bias of a convolution. Inputs are multiples of 1/8 (pooling: distinct
multiples, so that max pooling has no ties and its indices are unique); the sums of products
are then exact in f32 and compared with rtol 1e-5, atol 1e-5. torch_call() is shared with
gen_grad_conv_models.py.
"""
import torch
import torch.nn.functional as F

from refgen import case, write


def r(*shape):
    return torch.randint(-12, 13, shape).float() / 8


def distinct(*shape):
    n = int(torch.Size(shape).numel())
    return ((torch.randperm(n).float() - n // 2) / 8).reshape(shape)


def _w(v):
    """torch takes an int or a tuple; a one-value window means the same for every dim."""
    return v[0] if isinstance(v, list) and len(v) == 1 else tuple(v) if isinstance(v, list) else v


def torch_call(op, a, inputs):
    """The torch.nn.functional call that the kiln op `op` with attrs `a` stands for; returns a
    tensor or a (values, indices) pair."""
    x = inputs[0]
    if op.startswith("conv_transpose"):
        fn = getattr(F, op)
        b = inputs[2] if len(inputs) > 2 else None
        return fn(x, inputs[1], b, stride=_w(a.get("stride", 1)), padding=_w(a.get("padding", 0)),
                  output_padding=_w(a.get("output_padding", 0)), groups=a.get("groups", 1),
                  dilation=_w(a.get("dilation", 1)))
    if op.startswith("conv"):
        fn = getattr(F, op)
        b = inputs[2] if len(inputs) > 2 else None
        padding = "same" if a.get("same_padding") else _w(a.get("padding", 0))
        return fn(x, inputs[1], b, stride=_w(a.get("stride", 1)), padding=padding,
                  dilation=_w(a.get("dilation", 1)), groups=a.get("groups", 1))
    if op.startswith("max_pool"):
        stride = _w(a["stride"]) if a.get("stride") else None
        return getattr(F, op)(x, _w(a["kernel"]), stride, _w(a.get("padding", 0)), _w(a.get("dilation", 1)),
                              ceil_mode=a.get("ceil_mode", False), return_indices=True)
    if op.startswith("avg_pool"):
        stride = _w(a["stride"]) if a.get("stride") else None
        return getattr(F, op)(x, _w(a["kernel"]), stride, _w(a.get("padding", 0)), ceil_mode=a.get("ceil_mode", False),
                              count_include_pad=a.get("count_include_pad", True))
    if op.startswith("adaptive_max_pool"):
        return getattr(F, op)(x, _w(a["output_size"]), return_indices=True)
    if op.startswith("adaptive_avg_pool"):
        return getattr(F, op)(x, _w(a["output_size"]))
    if op == "interpolate2d":
        align = a.get("align_corners", False) if a["mode"] == "bilinear" else None
        if "size" in a:
            return F.interpolate(x, size=tuple(a["size"]), mode=a["mode"], align_corners=align)
        return F.interpolate(x, scale_factor=tuple(a["scale_factor"]), mode=a["mode"], align_corners=align)
    raise ValueError(op)


def ref(name, op, inputs, **attrs):
    out = torch_call(op, attrs, inputs)
    return case(name, op, inputs, list(out) if isinstance(out, tuple) else out, attrs)


def conv_cases():
    c = []

    def conv(name, d, x_shape, w_shape, bias=True, **attrs):
        inputs = [r(*x_shape), r(*w_shape)] + ([r(w_shape[0])] if bias else [])
        c.append(ref(name, "conv%dd" % d, inputs, **attrs))

    conv("conv1d_basic", 1, (2, 3, 10), (4, 3, 3))
    conv("conv1d_stride_pad", 1, (2, 3, 9), (4, 3, 3), stride=[2], padding=[1])
    conv("conv1d_dilation", 1, (1, 2, 11), (3, 2, 3), dilation=[2], padding=[2], stride=[3])
    conv("conv1d_depthwise", 1, (2, 3, 9), (6, 1, 3), groups=3, padding=[1])
    conv("conv1d_groups", 1, (1, 4, 7), (6, 2, 3), groups=2, stride=[2])
    conv("conv1d_same_odd", 1, (2, 2, 8), (3, 2, 3), same_padding=True, dilation=[2])
    conv("conv1d_same_even", 1, (1, 2, 7), (3, 2, 4), same_padding=True)
    conv("conv1d_unbatched", 1, (3, 8), (2, 3, 3), padding=[1])
    conv("conv1d_no_bias", 1, (2, 3, 6), (2, 3, 2), bias=False)
    conv("conv1d_one_pixel", 1, (2, 3, 1), (4, 3, 1))
    conv("conv1d_kernel_fills_input", 1, (2, 2, 3), (2, 2, 5), padding=[1])
    conv("conv1d_empty_batch", 1, (0, 3, 6), (2, 3, 3))
    conv("conv2d_basic", 2, (2, 3, 6, 5), (4, 3, 3, 3))
    conv("conv2d_stride_pad_dilation", 2, (1, 2, 9, 8), (3, 2, 3, 2), stride=[2, 1], padding=[1, 2], dilation=[1, 2])
    conv("conv2d_groups", 2, (2, 4, 5, 6), (6, 2, 3, 3), groups=2, padding=[1])
    conv("conv2d_depthwise", 2, (1, 4, 5, 5), (4, 1, 3, 3), groups=4, stride=[2])
    conv("conv2d_same_even", 2, (1, 2, 5, 6), (3, 2, 2, 4), same_padding=True)
    conv("conv2d_same_dilation", 2, (2, 2, 6, 5), (2, 2, 3, 2), same_padding=True, dilation=[2, 3])
    conv("conv2d_unbatched", 2, (3, 5, 5), (2, 3, 3, 3), padding=[1])
    conv("conv2d_1x1", 2, (2, 3, 4, 3), (5, 3, 1, 1))
    conv("conv2d_one_pixel", 2, (2, 3, 1, 1), (2, 3, 1, 1), bias=False)
    conv("conv2d_odd_stride", 2, (1, 1, 7, 3), (1, 1, 3, 3), stride=[3], padding=[1])
    conv("conv2d_empty_batch", 2, (0, 3, 4, 4), (2, 3, 3, 3))
    conv("conv3d_basic", 3, (1, 2, 4, 5, 3), (3, 2, 2, 3, 2), stride=[1, 2, 1], padding=[1, 0, 1])
    conv("conv3d_groups_dilation", 3, (2, 4, 5, 4, 4), (2, 2, 2, 2, 2), groups=2, dilation=[2])
    conv("conv3d_unbatched", 3, (2, 3, 3, 3), (2, 2, 3, 3, 3), padding=[1])
    conv("conv3d_same", 3, (1, 2, 3, 4, 3), (2, 2, 2, 3, 2), same_padding=True)

    def convt(name, d, x_shape, w_shape, bias=True, **attrs):
        groups = attrs.get("groups", 1)
        inputs = [r(*x_shape), r(*w_shape)] + ([r(w_shape[1] * groups)] if bias else [])
        c.append(ref(name, "conv_transpose%dd" % d, inputs, **attrs))

    convt("conv_transpose1d_basic", 1, (2, 3, 5), (3, 4, 3))
    convt("conv_transpose1d_stride_pad_outpad", 1, (2, 3, 5), (3, 2, 3), stride=[2], padding=[1], output_padding=[1])
    convt("conv_transpose1d_groups", 1, (1, 6, 4), (6, 1, 3), groups=3, stride=[2])
    # output_padding >= stride (allowed while below dilation): the output reaches past fold's range.
    convt("conv_transpose1d_outpad_dilation", 1, (1, 2, 4), (2, 3, 3), dilation=[3], padding=[1], output_padding=[2])
    convt("conv_transpose1d_outpad_past_pad", 1, (1, 2, 4), (2, 2, 2), dilation=[4], stride=[2], output_padding=[3])
    convt("conv_transpose1d_unbatched", 1, (3, 4), (3, 2, 2), stride=[3])
    convt("conv_transpose1d_empty_batch", 1, (0, 3, 4), (3, 2, 2), bias=False)
    convt("conv_transpose2d_basic", 2, (1, 2, 3, 4), (2, 3, 3, 3))
    convt("conv_transpose2d_strided", 2, (2, 2, 3, 3), (2, 2, 3, 2), stride=[2, 3], padding=[1, 0],
          output_padding=[1, 2])
    convt("conv_transpose2d_groups_dilation", 2, (1, 4, 3, 4), (4, 2, 2, 3), groups=2, dilation=[2, 1], padding=[1])
    convt("conv_transpose2d_outpad_dilation", 2, (1, 2, 3, 3), (2, 2, 2, 3), dilation=[2, 3], padding=[1],
          output_padding=[1, 2])
    convt("conv_transpose2d_pointwise", 2, (2, 3, 2, 3), (3, 4, 1, 1))
    convt("conv_transpose2d_unbatched", 2, (2, 3, 2), (2, 3, 2, 2), bias=False, stride=[2])
    return c


def pool_cases():
    c = []

    def pool(name, op, x_shape, shift=0.0, **attrs):
        c.append(ref(name, op, [distinct(*x_shape) + shift], **attrs))

    for op in ("max_pool1d", "avg_pool1d"):
        pool(op + "_basic", op, (2, 3, 10), kernel=[3], stride=[2], padding=[1])
        pool(op + "_default_stride", op, (1, 2, 9), kernel=[2])
        pool(op + "_ceil", op, (2, 2, 10), kernel=[3], stride=[2], ceil_mode=True)
        # ceil_mode's extra window would start in the right padding: torch drops it.
        pool(op + "_ceil_dropped", op, (1, 2, 5), kernel=[2], stride=[2], padding=[1], ceil_mode=True)
        pool(op + "_unbatched", op, (3, 7), kernel=[3], stride=[1], padding=[1])
        pool(op + "_one_pixel", op, (2, 2, 1), kernel=[1])
        pool(op + "_empty_batch", op, (0, 2, 6), kernel=[2])
    pool("max_pool1d_dilation", "max_pool1d", (1, 2, 11), kernel=[3], stride=[2], padding=[1], dilation=[2])
    # Every value negative: the padding (-inf) must never win.
    pool("max_pool1d_negative", "max_pool1d", (1, 1, 6), shift=-4.0, kernel=[3], stride=[2], padding=[1])
    # Windows of -inf only: torch names the first element inside the input.
    c.append(ref("max_pool1d_infinite", "max_pool1d", [torch.tensor([[[-1, -1, 2, -1.0]]]) * float("inf")],
                 kernel=[2], padding=[1]))
    pool("max_pool2d_negative", "max_pool2d", (1, 2, 4, 5), shift=-8.0, kernel=[2], stride=[2], padding=[1])
    pool("avg_pool1d_exclude_pad", "avg_pool1d", (2, 2, 9), kernel=[4], stride=[3], padding=[2],
         count_include_pad=False)
    pool("avg_pool1d_ceil_exclude_pad", "avg_pool1d", (1, 2, 10), kernel=[3], stride=[2], padding=[1], ceil_mode=True,
         count_include_pad=False)
    pool("avg_pool1d_ceil_include_pad", "avg_pool1d", (1, 2, 10), kernel=[3], stride=[2], padding=[1], ceil_mode=True)

    for op in ("max_pool2d", "avg_pool2d"):
        pool(op + "_basic", op, (2, 3, 7, 6), kernel=[3], stride=[2], padding=[1])
        pool(op + "_default_stride", op, (1, 2, 6, 4), kernel=[2])
        pool(op + "_rect", op, (1, 2, 7, 9), kernel=[2, 3], stride=[1, 2], padding=[1, 0])
        pool(op + "_ceil", op, (2, 2, 7, 8), kernel=[3, 2], stride=[2, 3], padding=[1, 1], ceil_mode=True)
        pool(op + "_unbatched", op, (3, 5, 5), kernel=[3], stride=[2], padding=[1])
        pool(op + "_one_pixel", op, (1, 2, 1, 1), kernel=[1])
        pool(op + "_empty_batch", op, (0, 2, 4, 4), kernel=[2])
    pool("max_pool2d_dilation", "max_pool2d", (1, 2, 9, 8), kernel=[3, 2], stride=[1, 2], padding=[1], dilation=[2, 3])
    pool("max_pool2d_dilation_ceil", "max_pool2d", (2, 1, 8, 7), kernel=[2], stride=[2], dilation=[2],
         ceil_mode=True)
    pool("avg_pool2d_exclude_pad", "avg_pool2d", (2, 2, 6, 7), kernel=[3], stride=[2], padding=[1],
         count_include_pad=False)
    pool("avg_pool2d_ceil_exclude_pad", "avg_pool2d", (1, 2, 8, 7), kernel=[3, 4], stride=[2, 3], padding=[1, 2],
         ceil_mode=True, count_include_pad=False)
    pool("avg_pool2d_ceil_include_pad", "avg_pool2d", (1, 2, 8, 7), kernel=[3, 4], stride=[2, 3], padding=[1, 2],
         ceil_mode=True)

    pool("adaptive_avg_pool1d_general", "adaptive_avg_pool1d", (2, 3, 10), output_size=[4])
    pool("adaptive_avg_pool1d_uniform", "adaptive_avg_pool1d", (2, 3, 8), output_size=[4])
    pool("adaptive_avg_pool1d_larger", "adaptive_avg_pool1d", (1, 2, 3), output_size=[5])
    pool("adaptive_avg_pool1d_unbatched", "adaptive_avg_pool1d", (3, 7), output_size=[3])
    pool("adaptive_avg_pool2d_general", "adaptive_avg_pool2d", (2, 3, 7, 5), output_size=[3, 2])
    pool("adaptive_avg_pool2d_uniform", "adaptive_avg_pool2d", (1, 2, 8, 6), output_size=[4, 3])
    pool("adaptive_avg_pool2d_global", "adaptive_avg_pool2d", (2, 3, 5, 4), output_size=[1])
    pool("adaptive_avg_pool2d_mixed", "adaptive_avg_pool2d", (1, 2, 6, 5), output_size=[3, 4])
    pool("adaptive_avg_pool2d_unbatched", "adaptive_avg_pool2d", (3, 5, 5), output_size=[2, 4])
    pool("adaptive_avg_pool2d_empty_batch", "adaptive_avg_pool2d", (0, 2, 5, 5), output_size=[2])
    pool("adaptive_max_pool1d_general", "adaptive_max_pool1d", (2, 3, 10), output_size=[4])
    pool("adaptive_max_pool1d_uniform", "adaptive_max_pool1d", (3, 9), output_size=[3])
    pool("adaptive_max_pool2d_general", "adaptive_max_pool2d", (2, 3, 7, 5), output_size=[3, 2])
    pool("adaptive_max_pool2d_uniform", "adaptive_max_pool2d", (1, 2, 8, 6), output_size=[4, 3])
    pool("adaptive_max_pool2d_global", "adaptive_max_pool2d", (2, 2, 5, 4), output_size=[1])
    pool("adaptive_max_pool2d_larger", "adaptive_max_pool2d", (1, 2, 3, 4), output_size=[5, 6])
    pool("adaptive_max_pool2d_unbatched", "adaptive_max_pool2d", (3, 6, 5), output_size=[4, 3])

    def interp(name, x_shape, **attrs):
        c.append(ref(name, "interpolate2d", [r(*x_shape)], **attrs))

    interp("nearest_size_up", (2, 2, 4, 3), size=[7, 5], mode="nearest")
    interp("nearest_size_down", (1, 2, 7, 9), size=[3, 4], mode="nearest")
    interp("nearest_scale_two", (1, 2, 3, 4), scale_factor=[2.0, 2.0], mode="nearest")
    interp("nearest_scale_odd", (1, 1, 5, 4), scale_factor=[1.5, 0.6], mode="nearest")
    interp("nearest_scale_same_size", (1, 1, 3, 4), scale_factor=[1.2, 1.1], mode="nearest")
    interp("nearest_size_same", (1, 2, 3, 3), size=[3, 5], mode="nearest")
    for align in (False, True):
        tag = "_align" if align else ""
        interp("bilinear_up" + tag, (2, 2, 4, 5), size=[7, 9], mode="bilinear", align_corners=align)
        interp("bilinear_down" + tag, (1, 2, 5, 7), size=[2, 3], mode="bilinear", align_corners=align)
        interp("bilinear_scale" + tag, (1, 1, 4, 3), scale_factor=[2.5, 1.3], mode="bilinear", align_corners=align)
        interp("bilinear_to_one" + tag, (1, 2, 3, 4), size=[1, 4], mode="bilinear", align_corners=align)
    interp("bilinear_one_pixel", (1, 2, 1, 1), size=[3, 2], mode="bilinear")
    interp("nearest_empty_batch", (0, 2, 3, 3), size=[5, 4], mode="nearest")
    return c


if __name__ == "__main__":
    torch.manual_seed(0)
    write("conv", conv_cases() + pool_cases())
