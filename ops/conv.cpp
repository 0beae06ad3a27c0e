// Shape rules of the sliding-window ops unfold and fold (engine/unfold.h), and of the direct
// convolution ops conv, conv_input_grad and conv_weight_grad (engine/conv.cpp, autograd's conv
// rule). Their attrs are WindowAttrs and ConvAttrs (ops/attrs_window.h), whose decoders check
// the form; the rules check them against the operands, so a message that reaches a kernel
// always describes at least one window.
#include <algorithm>
#include <cmath>
#include <string>

#include "kiln/ops/attrs_window.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// Windows along dim d of a spatial size `size`: (size + 2 p - dil (k - 1) - 1) / stride + 1, or
// 0 when not even one window fits (or a parameter is so large that the arithmetic would overflow).
std::int64_t windows_along(const WindowAttrs& w, int d, std::int64_t size) {
  std::int64_t padded = 0, span = 0;
  if (__builtin_mul_overflow(w.padding[d], 2, &padded) || __builtin_add_overflow(padded, size, &padded)) return 0;
  if (__builtin_mul_overflow(w.dilation[d], w.kernel[d] - 1, &span) || __builtin_add_overflow(span, 1, &span)) return 0;
  if (padded < span) return 0;
  return (padded - span) / w.stride[d] + 1;
}

// The product of the kernel sizes, or -1 when it overflows.
std::int64_t kernel_volume(const WindowAttrs& w) {
  std::int64_t k = 1;
  for (int d = 0; d < w.dims; ++d)
    if (__builtin_mul_overflow(k, w.kernel[d], &k)) return -1;
  return k;
}

// The windows of every spatial dim of `spatial`; throws naming the op when one dim has none.
// `what()` names the operand for the message: built only on failure (a shape rule runs for
// every op submitted, on the caller's thread).
template <class What>
Shape window_counts(const char* name, const WindowAttrs& w, const std::int64_t* spatial, const What& what) {
  Shape out;
  for (int d = 0; d < w.dims; ++d) {
    const std::int64_t n = windows_along(w, d, spatial[d]);
    KILN_CHECK(n >= 1, name,
               "the window (" + w.str() + ") is larger than the padded " + what() + " in spatial dim " +
                   std::to_string(d) + " (size " + std::to_string(spatial[d]) + " + 2 * " +
                   std::to_string(w.padding[d]) + ")");
    out.push_back(n);
  }
  return out;
}

void unfold_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& x = op.inputs[0];
  const int rank = x.shape.rank();
  KILN_CHECK(rank >= 3 && rank <= 5, "unfold",
             "expected an input [N, C, *spatial] with 1 to 3 spatial dims (rank 3 to 5), got " + describe(x));
  const WindowAttrs w = WindowAttrs::decode(op);
  KILN_CHECK(w.dims == rank - 2, "unfold",
             "the window has " + std::to_string(w.dims) + " spatial dims, input " + describe(x) + " has " +
                 std::to_string(rank - 2));
  const Shape counts = window_counts("unfold", w, x.shape.begin() + 2, [&] { return "input " + describe(x); });
  bool padded = false;
  for (int d = 0; d < w.dims; ++d) padded = padded || w.padding[d] > 0;
  const double v = w.pad_value;
  KILN_CHECK(x.dtype != DType::i64 || !padded || (std::isfinite(v) && v >= -0x1p63 && v < 0x1p63), "unfold",
             "pad value " + std::to_string(v) + " cannot be converted to i64 for input " + describe(x));
  const std::int64_t k = kernel_volume(w);
  std::int64_t rows = 0;
  KILN_CHECK(k > 0 && !__builtin_mul_overflow(x.shape[1], k, &rows), "unfold",
             "C * prod(kernel) overflows for input " + describe(x) + " and " + w.str());
  out.push_back(TensorIr{0, Shape{x.shape[0], rows, counts.numel()}, x.dtype, TensorStatus::NotInit});
}

void fold_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& cols = op.inputs[0];
  KILN_CHECK(cols.shape.rank() == 3, "fold", "expected columns [N, C * prod(kernel), L], got " + describe(cols));
  KILN_CHECK(is_floating(cols.dtype), "fold",
             "expected floating columns (f32, f16 or bf16): overlapping windows add up, got " + describe(cols));
  const WindowAttrs w = WindowAttrs::decode(op);
  for (int d = 0; d < w.dims; ++d)
    KILN_CHECK(w.output_size[d] > 0, "fold",
               "output_size " + spatial_str(w.output_size, w.dims) + " must be positive (columns " + describe(cols) + ")");
  auto image = [&] { return "output " + spatial_str(w.output_size, w.dims); };
  const Shape counts = window_counts("fold", w, w.output_size.data(), image);
  const std::int64_t k = kernel_volume(w);
  KILN_CHECK(k > 0 && cols.shape[1] % k == 0, "fold",
             "columns " + describe(cols) + ": dim 1 (" + std::to_string(cols.shape[1]) +
                 ") must be the channel count times prod(kernel) = " + std::to_string(k) + " (" + w.str() + ")");
  KILN_CHECK(cols.shape[2] == counts.numel(), "fold",
             "columns " + describe(cols) + " hold " + std::to_string(cols.shape[2]) + " windows, but " + w.str() +
                 " takes " + counts.str() + " = " + std::to_string(counts.numel()) + " windows of the " + image());
  Shape shape{cols.shape[0], cols.shape[1] / k};
  for (int d = 0; d < w.dims; ++d) shape.push_back(w.output_size[d]);
  out.push_back(TensorIr{0, shape, cols.dtype, TensorStatus::NotInit});
}

// The conv ops' attrs, checked against the spatial rank `s` of their first operand.
ConvAttrs checked_conv_attrs(const OpIr& op, int s) {
  const ConvAttrs a = ConvAttrs::decode(op);
  KILN_CHECK(a.dims == s, op_name(op.kind),
             "the attrs name " + std::to_string(a.dims) + " spatial dims, the operand " + describe(op.inputs[0]) +
                 " has " + std::to_string(s));
  return a;
}

// The spatial rank of a [N, C, *spatial] operand, which every conv op has first.
int spatial_rank(const OpIr& op) {
  KILN_CHECK(!op.inputs.empty(), op_name(op.kind), "expected inputs");
  const int rank = op.inputs[0].shape.rank();
  KILN_CHECK(rank >= 3 && rank <= 5, op_name(op.kind),
             "expected [N, C, *spatial] with 1 to 3 spatial dims, got " + describe(op.inputs[0]));
  return rank - 2;
}

void check_floating(const OpIr& op) {
  for (const TensorIr& t : op.inputs)
    KILN_CHECK(is_floating(t.dtype) && t.dtype == op.inputs[0].dtype, op_name(op.kind),
               "operands must have one floating dtype, got " + describe(op.inputs[0]) + " and " + describe(t));
}

// conv: x [N, C, *in], weight [K, C / groups, *kernel], optional bias [K] -> [N, K, *out].
void conv_rule(const OpIr& op, TensorList& out) {
  const int s = spatial_rank(op);
  KILN_CHECK(op.inputs.size() == 2 || op.inputs.size() == 3, "conv",
             "expected inputs (x, weight) or (x, weight, bias), got " + std::to_string(op.inputs.size()));
  check_floating(op);
  const TensorIr &x = op.inputs[0], &w = op.inputs[1];
  const ConvAttrs a = checked_conv_attrs(op, s);
  KILN_CHECK(w.shape.rank() == s + 2 && w.shape[0] % a.groups == 0 && w.shape[1] * a.groups == x.shape[1], "conv",
             "expected a weight [K, C / groups, *kernel] with groups (" + std::to_string(a.groups) +
                 ") dividing K, got input " + describe(x) + ", weight " + describe(w));
  KILN_CHECK(op.inputs.size() == 2 || op.inputs[2].shape == Shape{w.shape[0]}, "conv",
             "expected a bias [" + std::to_string(w.shape[0]) + "], got " + describe(op.inputs.back()));
  const WindowAttrs window = a.window(w.shape.begin() + 2);
  const Shape windows = window_counts(op_name(op.kind), window, x.shape.begin() + 2, [&] { return "input " + describe(x); });
  Shape shape{x.shape[0], w.shape[0]};
  for (std::int64_t v : windows) shape.push_back(v);
  out.push_back(TensorIr{0, shape, x.dtype, TensorStatus::NotInit});
}

// conv_input_grad: dy [N, K, *out], weight [K, C / groups, *kernel] -> dx [N, C, *input_size].
void conv_input_grad_rule(const OpIr& op, TensorList& out) {
  const int s = spatial_rank(op);
  check_arity(op, 2);
  check_floating(op);
  const TensorIr &dy = op.inputs[0], &w = op.inputs[1];
  const ConvAttrs a = checked_conv_attrs(op, s);
  KILN_CHECK(w.shape.rank() == s + 2 && w.shape[0] == dy.shape[1] && w.shape[0] % a.groups == 0, "conv_input_grad",
             "expected a weight [K, C / groups, *kernel] with K = dy's channels, divided by groups (" +
                 std::to_string(a.groups) + "), got dy " + describe(dy) + ", weight " + describe(w));
  const WindowAttrs window = a.window(w.shape.begin() + 2);
  const Shape windows =
      window_counts(op_name(op.kind), window, a.sizes.data(), [&] { return "input " + spatial_str(a.sizes, s); });
  KILN_CHECK(std::equal(windows.begin(), windows.end(), dy.shape.begin() + 2), "conv_input_grad",
             "dy " + describe(dy) + " does not hold the " + windows.str() + " windows of an input " +
                 spatial_str(a.sizes, s) + " and weight " + describe(w));
  Shape shape{dy.shape[0], w.shape[1] * a.groups};
  for (int d = 0; d < s; ++d) shape.push_back(a.sizes[d]);
  out.push_back(TensorIr{0, shape, dy.dtype, TensorStatus::NotInit});
}

// conv_weight_grad: dy [N, K, *out], x [N, C, *in] -> dw [K, C / groups, *kernel].
void conv_weight_grad_rule(const OpIr& op, TensorList& out) {
  const int s = spatial_rank(op);
  check_arity(op, 2);
  check_floating(op);
  const TensorIr &dy = op.inputs[0], &x = op.inputs[1];
  const ConvAttrs a = checked_conv_attrs(op, s);
  KILN_CHECK(
      x.shape.rank() == s + 2 && x.shape[0] == dy.shape[0] && x.shape[1] % a.groups == 0 && dy.shape[1] % a.groups == 0,
      "conv_weight_grad",
      "expected dy [N, K, *out] and x [N, C, *in] with groups (" + std::to_string(a.groups) +
          ") dividing C and K, got dy " + describe(dy) + ", x " + describe(x));
  const WindowAttrs window = a.window(a.sizes.data());
  const Shape windows = window_counts(op_name(op.kind), window, x.shape.begin() + 2, [&] { return "input " + describe(x); });
  KILN_CHECK(std::equal(windows.begin(), windows.end(), dy.shape.begin() + 2), "conv_weight_grad",
             "dy " + describe(dy) + " does not hold the " + windows.str() + " windows of x " + describe(x) +
                 " and kernel " + spatial_str(a.sizes, s));
  Shape shape{dy.shape[1], x.shape[1] / a.groups};
  for (int d = 0; d < s; ++d) shape.push_back(a.sizes[d]);
  out.push_back(TensorIr{0, shape, dy.dtype, TensorStatus::NotInit});
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  // Both gather from other positions than they write: never in place.
  r.at(OpKind::unfold).shape_rule = unfold_rule;
  r.at(OpKind::fold).shape_rule = fold_rule;
  r.at(OpKind::conv).shape_rule = conv_rule;
  r.at(OpKind::conv_input_grad).shape_rule = conv_input_grad_rule;
  r.at(OpKind::conv_weight_grad).shape_rule = conv_weight_grad_rule;
}

}  // namespace kiln
