// Shape rules of the sliding-window ops unfold and fold (engine/unfold.h), and of the direct
// convolution ops conv, conv_input_grad and conv_weight_grad (engine/conv.cpp, autograd's conv
// rule). unfold and fold read the window from ints = [s, kernel[s], dilation[s], padding[s],
// stride[s]] (fold: then output_size[s]), which engine/unfold.cpp builds with one value per
// spatial dim; the conv ops' ints are in ops/op_list.def. The rules check that canonical form
// strictly, so a message that reaches a kernel always describes at least one window.
#include <algorithm>
#include <cmath>
#include <string>

#include "kiln/ops/registry.h"

namespace kiln {

namespace {

std::string ints_str(const std::int64_t* v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The window of one op, read from its ints. Sizes of a tensor and window parameters are far
// below 2^62, but a user's parameters may not be: every product below is checked.
struct WindowAttrs {
  int s = 0;
  const std::int64_t* kernel = nullptr;
  const std::int64_t* dilation = nullptr;
  const std::int64_t* padding = nullptr;
  const std::int64_t* stride = nullptr;
  const std::int64_t* output_size = nullptr;  // fold only

  std::string str() const {
    return "kernel " + ints_str(kernel, s) + ", dilation " + ints_str(dilation, s) + ", padding " +
           ints_str(padding, s) + ", stride " + ints_str(stride, s);
  }
};

WindowAttrs read_window(const OpIr& op, bool fold) {
  const char* name = op_name(op.kind);
  const auto& ints = op.attrs.ints;
  KILN_CHECK(!ints.empty() && ints[0] >= 1 && ints[0] <= 3, name,
             "expected ints = [s, kernel[s], dilation[s], padding[s], stride[s]" +
                 std::string(fold ? ", output_size[s]" : "") + "] with s = 1 to 3 spatial dims");
  WindowAttrs w;
  w.s = static_cast<int>(ints[0]);
  const std::size_t groups = fold ? 5 : 4;
  KILN_CHECK(ints.size() == 1 + groups * static_cast<std::size_t>(w.s), name,
             "expected " + std::to_string(1 + groups * static_cast<std::size_t>(w.s)) + " ints for " +
                 std::to_string(w.s) + " spatial dims, got " + std::to_string(ints.size()));
  w.kernel = ints.data() + 1;
  w.dilation = w.kernel + w.s;
  w.padding = w.dilation + w.s;
  w.stride = w.padding + w.s;
  if (fold) w.output_size = w.stride + w.s;
  for (int d = 0; d < w.s; ++d) {
    KILN_CHECK(w.kernel[d] > 0, name, "kernel sizes must be positive, got " + w.str());
    KILN_CHECK(w.dilation[d] > 0, name, "dilations must be positive, got " + w.str());
    KILN_CHECK(w.padding[d] >= 0, name, "paddings must not be negative, got " + w.str());
    KILN_CHECK(w.stride[d] > 0, name, "strides must be positive, got " + w.str());
  }
  return w;
}

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
  for (int d = 0; d < w.s; ++d)
    if (__builtin_mul_overflow(k, w.kernel[d], &k)) return -1;
  return k;
}

// The windows of every spatial dim of `spatial`; throws naming the op when one dim has none.
// `what()` names the operand for the message: built only on failure (a shape rule runs for
// every op submitted, on the caller's thread).
template <class What>
Shape window_counts(const char* name, const WindowAttrs& w, const std::int64_t* spatial, const What& what) {
  Shape out;
  for (int d = 0; d < w.s; ++d) {
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
  const WindowAttrs w = read_window(op, false);
  KILN_CHECK(w.s == rank - 2, "unfold",
             "the window has " + std::to_string(w.s) + " spatial dims, input " + describe(x) + " has " +
                 std::to_string(rank - 2));
  const Shape counts = window_counts("unfold", w, x.shape.begin() + 2, [&] { return "input " + describe(x); });
  bool padded = false;
  for (int d = 0; d < w.s; ++d) padded = padded || w.padding[d] > 0;
  const double v = op.attrs.scalar;
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
  const WindowAttrs w = read_window(op, true);
  for (int d = 0; d < w.s; ++d)
    KILN_CHECK(w.output_size[d] > 0, "fold",
               "output_size " + ints_str(w.output_size, w.s) + " must be positive (columns " + describe(cols) + ")");
  auto image = [&] { return "output " + ints_str(w.output_size, w.s); };
  const Shape counts = window_counts("fold", w, w.output_size, image);
  const std::int64_t k = kernel_volume(w);
  KILN_CHECK(k > 0 && cols.shape[1] % k == 0, "fold",
             "columns " + describe(cols) + ": dim 1 (" + std::to_string(cols.shape[1]) +
                 ") must be the channel count times prod(kernel) = " + std::to_string(k) + " (" + w.str() + ")");
  KILN_CHECK(cols.shape[2] == counts.numel(), "fold",
             "columns " + describe(cols) + " hold " + std::to_string(cols.shape[2]) + " windows, but " + w.str() +
                 " takes " + counts.str() + " = " + std::to_string(counts.numel()) + " windows of the " + image());
  Shape shape{cols.shape[0], cols.shape[1] / k};
  for (int d = 0; d < w.s; ++d) shape.push_back(w.output_size[d]);
  out.push_back(TensorIr{0, shape, cols.dtype, TensorStatus::NotInit});
}

// The attrs of the conv ops: ints = [s, stride[s], padding[s], dilation[s], groups] and, for the
// gradients, the sizes the forward's operands had that the gradient's own operands do not fix
// (conv_input_grad: the input's spatial size; conv_weight_grad: the kernel).
struct ConvAttrs {
  WindowAttrs window;  // kernel filled in by the caller
  std::int64_t groups = 1;
  const std::int64_t* sizes = nullptr;  // the gradients' extra sizes
};

ConvAttrs read_conv_attrs(const OpIr& op, int s, bool sizes) {
  const char* name = op_name(op.kind);
  const auto& ints = op.attrs.ints;
  const std::size_t want = 2 + (sizes ? 4 : 3) * static_cast<std::size_t>(s);
  KILN_CHECK(ints.size() == want && ints[0] == s, name,
             "expected ints = [s, stride[s], padding[s], dilation[s], groups" +
                 std::string(sizes ? (op.kind == OpKind::conv_input_grad ? ", input_size[s]" : ", kernel[s]") : "") +
                 "] for s = " + std::to_string(s) + " spatial dims (" + std::to_string(want) + " ints), got " +
                 std::to_string(ints.size()) + " ints");
  ConvAttrs a;
  a.window.s = s;
  a.window.stride = ints.data() + 1;
  a.window.padding = a.window.stride + s;
  a.window.dilation = a.window.padding + s;
  a.groups = a.window.dilation[s];
  if (sizes) a.sizes = a.window.dilation + s + 1;
  for (int d = 0; d < s; ++d) {
    KILN_CHECK(a.window.stride[d] > 0 && a.window.dilation[d] > 0 && a.window.padding[d] >= 0, name,
               "strides and dilations must be positive and paddings not negative, got stride " +
                   ints_str(a.window.stride, s) + ", padding " + ints_str(a.window.padding, s) + ", dilation " +
                   ints_str(a.window.dilation, s));
    KILN_CHECK(!sizes || a.sizes[d] > 0, name, "sizes must be positive, got " + ints_str(a.sizes, s));
  }
  KILN_CHECK(a.groups >= 1, name, "groups must be positive, got " + std::to_string(a.groups));
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
  ConvAttrs a = read_conv_attrs(op, s, false);
  KILN_CHECK(w.shape.rank() == s + 2 && w.shape[0] % a.groups == 0 && w.shape[1] * a.groups == x.shape[1], "conv",
             "expected a weight [K, C / groups, *kernel] with groups (" + std::to_string(a.groups) +
                 ") dividing K, got input " + describe(x) + ", weight " + describe(w));
  KILN_CHECK(op.inputs.size() == 2 || op.inputs[2].shape == Shape{w.shape[0]}, "conv",
             "expected a bias [" + std::to_string(w.shape[0]) + "], got " + describe(op.inputs.back()));
  a.window.kernel = w.shape.begin() + 2;
  const Shape windows = window_counts(op_name(op.kind), a.window, x.shape.begin() + 2, [&] { return "input " + describe(x); });
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
  ConvAttrs a = read_conv_attrs(op, s, true);
  KILN_CHECK(w.shape.rank() == s + 2 && w.shape[0] == dy.shape[1] && w.shape[0] % a.groups == 0, "conv_input_grad",
             "expected a weight [K, C / groups, *kernel] with K = dy's channels, divided by groups (" +
                 std::to_string(a.groups) + "), got dy " + describe(dy) + ", weight " + describe(w));
  a.window.kernel = w.shape.begin() + 2;
  const Shape windows = window_counts(op_name(op.kind), a.window, a.sizes, [&] { return "input " + ints_str(a.sizes, s); });
  KILN_CHECK(std::equal(windows.begin(), windows.end(), dy.shape.begin() + 2), "conv_input_grad",
             "dy " + describe(dy) + " does not hold the " + windows.str() + " windows of an input " +
                 ints_str(a.sizes, s) + " and weight " + describe(w));
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
  ConvAttrs a = read_conv_attrs(op, s, true);
  KILN_CHECK(
      x.shape.rank() == s + 2 && x.shape[0] == dy.shape[0] && x.shape[1] % a.groups == 0 && dy.shape[1] % a.groups == 0,
      "conv_weight_grad",
      "expected dy [N, K, *out] and x [N, C, *in] with groups (" + std::to_string(a.groups) +
          ") dividing C and K, got dy " + describe(dy) + ", x " + describe(x));
  a.window.kernel = a.sizes;
  const Shape windows = window_counts(op_name(op.kind), a.window, x.shape.begin() + 2, [&] { return "input " + describe(x); });
  KILN_CHECK(std::equal(windows.begin(), windows.end(), dy.shape.begin() + 2), "conv_weight_grad",
             "dy " + describe(dy) + " does not hold the " + windows.str() + " windows of x " + describe(x) +
                 " and kernel " + ints_str(a.sizes, s));
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
