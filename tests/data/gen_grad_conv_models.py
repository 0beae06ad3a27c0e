"""Reference gradients of convolution, pooling and interpolation through autograd, written to
grad_conv_models.json (read by tests/autograd/test_conv_grads.cpp).

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_grad_conv_models.py
Layout: tests/data/gradgen.py (inputs: x, weight, bias as the op takes them, then the seed;
outputs: torch's gradient of each input). The attrs are those of gen_conv.py. Pooling inputs are
distinct multiples of 1/8, so that a max is never tied and finite differences (step 1e-2) never
move it; the ops are linear in each input elsewhere, so finite differences hold everywhere.
"""
import torch

from gen_conv import distinct, r, torch_call
from gradgen import grad_case
from refgen import write

torch.manual_seed(1)
cases = []


def add(name, op, inputs, **attrs):
    def fn(*leaves):
        out = torch_call(op, attrs, list(leaves))
        return out[0] if isinstance(out, tuple) else out

    cases.append(grad_case(name, op, fn, inputs, attrs))


def conv(name, op, x_shape, w_shape, bias_size=None, **attrs):
    add(name, op, [r(*x_shape), r(*w_shape)] + ([r(bias_size)] if bias_size else []), **attrs)


conv("conv1d_stride_pad", "conv1d", (2, 3, 9), (4, 3, 3), 4, stride=[2], padding=[1])
conv("conv1d_same_even", "conv1d", (1, 2, 7), (3, 2, 4), 3, same_padding=True)
conv("conv1d_depthwise_dilation", "conv1d", (2, 3, 8), (6, 1, 2), 6, groups=3, dilation=[3])
conv("conv1d_unbatched", "conv1d", (2, 6), (3, 2, 3), None, padding=[2])
conv("conv2d_groups_dilation_stride", "conv2d", (2, 4, 7, 6), (6, 2, 3, 2), 6, groups=2, dilation=[2, 1],
     stride=[2], padding=[1])
conv("conv2d_depthwise", "conv2d", (1, 3, 5, 5), (3, 1, 3, 3), 3, groups=3, padding=[1])
conv("conv2d_same", "conv2d", (1, 2, 4, 5), (2, 2, 2, 3), None, same_padding=True)
conv("conv2d_tiny", "conv2d", (1, 1, 3, 3), (2, 1, 2, 2), 2)
conv("conv2d_pointwise", "conv2d", (2, 3, 3, 2), (4, 3, 1, 1), 4)
conv("conv3d_basic", "conv3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), 2, stride=[1, 2, 1], padding=[1, 0, 1])
conv("conv_transpose1d_stride_outpad", "conv_transpose1d", (2, 3, 4), (3, 2, 3), 2, stride=[2], padding=[1],
     output_padding=[1])
conv("conv_transpose1d_outpad_dilation", "conv_transpose1d", (1, 2, 4), (2, 3, 3), 3, dilation=[3], padding=[1],
     output_padding=[2])
conv("conv_transpose2d_groups", "conv_transpose2d", (1, 4, 3, 3), (4, 1, 3, 2), 2, groups=2, stride=[2, 1],
     padding=[1, 0], output_padding=[1, 0])
conv("conv_transpose2d_pointwise", "conv_transpose2d", (1, 3, 2, 3), (3, 2, 1, 1), 2)
conv("conv_transpose2d_tiny", "conv_transpose2d", (1, 2, 2, 2), (2, 1, 2, 2), 1, stride=[2])


def pool(name, op, x_shape, **attrs):
    add(name, op, [distinct(*x_shape)], **attrs)


pool("max_pool1d_pad_ceil", "max_pool1d", (2, 2, 9), kernel=[3], stride=[2], padding=[1], ceil_mode=True)
pool("max_pool2d_overlap", "max_pool2d", (1, 2, 6, 5), kernel=[3], stride=[1, 2], padding=[1])
pool("max_pool2d_dilation", "max_pool2d", (1, 1, 7, 6), kernel=[2], stride=[2], dilation=[2], ceil_mode=True)
pool("max_pool2d_tiny", "max_pool2d", (1, 1, 4, 4), kernel=[2])
pool("avg_pool1d_exclude_pad_ceil", "avg_pool1d", (1, 2, 10), kernel=[3], stride=[2], padding=[1], ceil_mode=True,
     count_include_pad=False)
pool("avg_pool2d_overlap", "avg_pool2d", (2, 1, 5, 6), kernel=[3, 2], stride=[1, 2], padding=[1])
pool("avg_pool2d_tiny", "avg_pool2d", (1, 1, 3, 4), kernel=[2], padding=[1], count_include_pad=False)
pool("adaptive_avg_pool1d_general", "adaptive_avg_pool1d", (1, 2, 7), output_size=[3])
pool("adaptive_avg_pool2d_general", "adaptive_avg_pool2d", (1, 2, 7, 5), output_size=[3, 2])
pool("adaptive_avg_pool2d_uniform", "adaptive_avg_pool2d", (1, 2, 4, 6), output_size=[2, 3])
pool("adaptive_max_pool2d_general", "adaptive_max_pool2d", (1, 2, 7, 5), output_size=[3, 4])
pool("adaptive_max_pool2d_tiny", "adaptive_max_pool2d", (1, 1, 3, 4), output_size=[2])
pool("interpolate_nearest", "interpolate2d", (1, 2, 3, 4), size=[5, 7], mode="nearest")
pool("interpolate_bilinear", "interpolate2d", (1, 2, 4, 3), size=[6, 5], mode="bilinear")
pool("interpolate_bilinear_align", "interpolate2d", (1, 1, 4, 4), scale_factor=[1.5, 0.75], mode="bilinear",
     align_corners=True)
pool("interpolate_bilinear_tiny", "interpolate2d", (1, 1, 2, 3), size=[3, 4], mode="bilinear")

write("grad_conv_models", cases)
