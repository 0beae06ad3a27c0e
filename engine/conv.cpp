// Convolution as one conv op; transposed convolution as one conv_input_grad op, or matmul +
// fold where output_padding reaches past the stride. A device without kernels for these ops
// runs them decomposed (ops/decompositions.h). Every check
// happens here, on the caller's thread, so that errors name the conv op and its operands rather
// than the ops it submits.
#include "kiln/engine/conv.h"

#include <algorithm>

#include "kiln/engine/elementwise.h"
#include "kiln/engine/layout.h"
#include "kiln/engine/linalg.h"
#include "kiln/engine/submit.h"
#include "kiln/engine/window_args.h"
#include "kiln/ops/attrs_window.h"

namespace kiln {

namespace {

using detail::describe;
using detail::ints_str;

std::int64_t product(const Window& w) {
  std::int64_t p = 1;
  for (std::int64_t v : w) p *= v;
  return p;
}

std::string operands(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return "input " + describe(x) + ", weight " + describe(weight) + (bias.defined() ? ", bias " + describe(bias) : "");
}

// What convolution and its transpose both require of their operands; returns x with a batch dim.
detail::BatchedInput check_operands(const char* op, int dims, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    std::int64_t groups) {
  detail::BatchedInput in = detail::batched_input(op, x, dims);
  KILN_CHECK(weight.defined() && weight.rank() == dims + 2, op,
             "expected a weight with " + std::to_string(dims + 2) + " dims, got " + operands(x, weight, bias));
  KILN_CHECK(weight.dtype() == x.dtype() && (!bias.defined() || bias.dtype() == x.dtype()), op,
             "operands must have one dtype, got " + operands(x, weight, bias));
  KILN_CHECK(weight.device() == x.device() && (!bias.defined() || bias.device() == x.device()), op,
             "operands must be on one device, got input on " + x.device().str() + ", weight on " +
                 weight.device().str() + (bias.defined() ? ", bias on " + bias.device().str() : ""));
  KILN_CHECK(groups >= 1, op, "groups must be positive, got " + std::to_string(groups));
  KILN_CHECK(
      in.x.size(1) % groups == 0, op,
      "groups (" + std::to_string(groups) + ") must divide the input channels, got " + operands(x, weight, bias));
  return in;
}

void check_bias(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias, std::int64_t channels) {
  KILN_CHECK(!bias.defined() || (bias.rank() == 1 && bias.size(0) == channels), op,
             "expected a bias of shape [" + std::to_string(channels) + "], got " + operands(x, weight, bias));
}

Window kernel_of(const Tensor& weight) {
  const Shape& s = weight.shape();
  return Window(s.begin() + 2, s.end());
}

// The conv ops' attrs (ops/attrs_window.h) from windows of one value per spatial dim.
ConvAttrs conv_attrs(int dims, const Window& stride, const Window& padding, const Window& dilation, std::int64_t groups) {
  ConvAttrs a;
  a.dims = dims;
  std::copy(stride.begin(), stride.end(), a.stride.begin());
  std::copy(padding.begin(), padding.end(), a.padding.begin());
  std::copy(dilation.begin(), dilation.end(), a.dilation.begin());
  a.groups = groups;
  return a;
}

// [K] -> [K, 1, ..., 1]: broadcast along `trailing` dims.
Tensor bias_column(Tensor bias, int trailing) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(trailing) + 1, 1);
  shape[0] = bias.size(0);
  return reshape(std::move(bias), shape);
}

Tensor conv_nd(const char* op, int dims, const Tensor& x, Tensor weight, Tensor bias, const ConvOptions& o) {
  const auto [xb, unbatched] = check_operands(op, dims, x, weight, bias, o.groups);
  const std::int64_t c = xb.size(1), k = weight.size(0), g = o.groups;
  KILN_CHECK(c == weight.size(1) * g, op,
             "input channels " + std::to_string(c) + " must equal weight channels " + std::to_string(weight.size(1)) +
                 " x groups " + std::to_string(g) + ", got " + operands(x, weight, bias));
  KILN_CHECK(k % g == 0, op,
             "groups (" + std::to_string(g) + ") must divide the output channels, got " + operands(x, weight, bias));
  check_bias(op, x, weight, bias, k);
  const Window kernel = kernel_of(weight);
  const Window stride = detail::per_dim(op, "stride", o.stride, dims, 1);
  const Window dilation = detail::per_dim(op, "dilation", o.dilation, dims, 1);
  Window padding = detail::per_dim(op, "padding", o.padding, dims, 0);

  Tensor input = xb;
  Window padded(dims);
  if (o.same_padding) {
    for (std::int64_t s : stride)
      KILN_CHECK(s == 1, op, "same padding needs stride 1, got stride " + ints_str(o.stride));
    // torch pads total = dilation (kernel - 1) per dim, the odd one at the end: an explicit
    // pad of the difference, then symmetric padding.
    std::vector<std::int64_t> extra;  // (before, after) pairs from the last dim, as pad() takes them
    bool asymmetric = false;
    for (int d = dims - 1; d >= 0; --d) {
      const std::int64_t total = dilation[d] * (kernel[d] - 1);
      padding[d] = total / 2;
      extra.push_back(0);
      extra.push_back(total - 2 * padding[d]);
      asymmetric = asymmetric || total % 2 != 0;
    }
    if (asymmetric) input = pad(std::move(input), extra);
  }
  for (int d = 0; d < dims; ++d) padded[d] = input.size(2 + d) + 2 * padding[d];
  Window out(dims);
  for (int d = 0; d < dims; ++d) {
    const std::int64_t span = dilation[d] * (kernel[d] - 1) + 1;
    KILN_CHECK(span <= padded[d], op,
               "the padded input " + ints_str(padded) + " is smaller than the dilated kernel (kernel " +
                   ints_str(kernel) + ", dilation " + ints_str(dilation) + "), got " + operands(x, weight, bias));
    out[d] = (padded[d] - span) / stride[d] + 1;
  }

  // One conv op on every device (the CPU's devices/cpu/conv_gemm.h, Vulkan's implicit GEMM in
  // devices/vulkan/vk_conv_gemm.h), which never builds the columns of unfold + matmul: for a
  // ResNet layer they are tens of MB that go to memory and back, and the backward would keep
  // them. Its backward rule uses conv_input_grad and conv_weight_grad. A device without these
  // kernels runs unfold + matmul instead (ops/decompositions.h), which stays their test oracle.
  const OpAttrs a = conv_attrs(dims, stride, padding, dilation, g).encode(OpKind::conv);
  Tensor y = bias.defined() ? detail::submit3(OpKind::conv, std::move(input), std::move(weight), std::move(bias), a)
                            : detail::submit2(OpKind::conv, std::move(input), std::move(weight), a);
  return detail::unbatched_result(std::move(y), unbatched);
}

Tensor conv_transpose_nd(const char* op, int dims, const Tensor& x, Tensor weight, Tensor bias,
                         const ConvTransposeOptions& o) {
  const auto [xb, unbatched] = check_operands(op, dims, x, weight, bias, o.groups);
  const std::int64_t n = xb.size(0), c = xb.size(1), g = o.groups, k = weight.size(1) * g;
  KILN_CHECK(
      c == weight.size(0), op,
      "input channels " + std::to_string(c) + " must equal the weight's first dim, got " + operands(x, weight, bias));
  check_bias(op, x, weight, bias, k);
  const Window kernel = kernel_of(weight);
  const Window stride = detail::per_dim(op, "stride", o.stride, dims, 1);
  const Window dilation = detail::per_dim(op, "dilation", o.dilation, dims, 1);
  const Window padding = detail::per_dim(op, "padding", o.padding, dims, 0);
  const Window output_padding = detail::per_dim(op, "output_padding", o.output_padding, dims, 0);

  Window out(dims), full(dims);
  bool direct = true;
  for (int d = 0; d < dims; ++d) {
    KILN_CHECK(output_padding[d] < stride[d] || output_padding[d] < dilation[d], op,
               "output_padding " + ints_str(o.output_padding) + " must be smaller than stride " + ints_str(o.stride) +
                   " or dilation " + ints_str(o.dilation));
    // The image every input position's window lands in, before padding is cut off.
    full[d] = (xb.size(2 + d) - 1) * stride[d] + dilation[d] * (kernel[d] - 1) + 1;
    out[d] = full[d] - 2 * padding[d] + output_padding[d];
    KILN_CHECK(out[d] > 0, op,
               "the output size would be " + ints_str(out) + " (not positive), got " + operands(x, weight, bias) +
                   ", padding " + ints_str(padding));
    direct = direct && output_padding[d] < stride[d];
  }

  // A transposed convolution is the input gradient of the convolution it transposes: one
  // conv_input_grad op (decomposed into matmul + fold where a device has no kernel for it) while
  // output_padding stays below the stride, where that convolution's windows over `out` are
  // exactly x's positions.
  if (direct) {
    ConvAttrs a = conv_attrs(dims, stride, padding, dilation, g);
    std::copy(out.begin(), out.end(), a.sizes.begin());
    Tensor y = detail::submit2(OpKind::conv_input_grad, xb, std::move(weight), a.encode(OpKind::conv_input_grad));
    if (bias.defined()) y = add(std::move(y), bias_column(std::move(bias), dims));
    return detail::unbatched_result(std::move(y), unbatched);
  }

  // output_padding >= stride (allowed while below dilation) reaches past the windows of that
  // convolution: [K * kk, C] @ [N, C, L] (per group: [G, K/G * kk, C/G] @ [N, G, C/G, L]) ->
  // [N, K * kk, L], row k * kk + j of the columns output channel k at kernel offset j, fold's
  // layout; fold the full image, cut the padding, then add the zeros beyond its end.
  const Shape& in_shape = xb.shape();
  const std::int64_t kk = product(kernel), in_windows = product(Window(in_shape.begin() + 2, in_shape.end()));
  Tensor cols;
  if (g == 1) {
    cols = matmul(transpose(reshape(std::move(weight), {c, k * kk}), 0, 1), reshape(xb, {n, c, in_windows}));
  } else {
    Tensor wt = transpose(reshape(std::move(weight), {g, c / g, k / g * kk}), 1, 2);
    cols = reshape(matmul(std::move(wt), reshape(xb, {n, g, c / g, in_windows})), {n, k * kk, in_windows});
  }
  Tensor y = fold(std::move(cols), full, kernel, dilation, Window{0}, stride);
  std::vector<std::int64_t> tail;
  for (int d = dims - 1; d >= 0; --d) {
    y = slice(std::move(y), 2 + d, padding[d], padding[d] + out[d]);
    tail.push_back(0);
    tail.push_back(out[d] - y.size(2 + d));
  }
  y = pad(std::move(y), tail);
  if (bias.defined()) y = add(std::move(y), bias_column(std::move(bias), dims));
  return detail::unbatched_result(std::move(y), unbatched);
}

}  // namespace

Tensor conv1d(Tensor x, Tensor weight, Tensor bias, const ConvOptions& o) {
  return conv_nd("conv1d", 1, x, std::move(weight), std::move(bias), o);
}
Tensor conv2d(Tensor x, Tensor weight, Tensor bias, const ConvOptions& o) {
  return conv_nd("conv2d", 2, x, std::move(weight), std::move(bias), o);
}
Tensor conv3d(Tensor x, Tensor weight, Tensor bias, const ConvOptions& o) {
  return conv_nd("conv3d", 3, x, std::move(weight), std::move(bias), o);
}

Tensor conv_transpose1d(Tensor x, Tensor weight, Tensor bias, const ConvTransposeOptions& o) {
  return conv_transpose_nd("conv_transpose1d", 1, x, std::move(weight), std::move(bias), o);
}
Tensor conv_transpose2d(Tensor x, Tensor weight, Tensor bias, const ConvTransposeOptions& o) {
  return conv_transpose_nd("conv_transpose2d", 2, x, std::move(weight), std::move(bias), o);
}
Tensor conv_transpose3d(Tensor x, Tensor weight, Tensor bias, const ConvTransposeOptions& o) {
  return conv_transpose_nd("conv_transpose3d", 3, x, std::move(weight), std::move(bias), o);
}

}  // namespace kiln
