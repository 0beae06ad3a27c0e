// Shape rules of the sliding-window ops unfold and fold (engine/unfold.h). Both read the window
// from ints = [s, kernel[s], dilation[s], padding[s], stride[s]] (fold: then output_size[s]),
// which engine/unfold.cpp builds with one value per spatial dim; the rules check that canonical
// form strictly, so a message that reaches a kernel always describes at least one window.
#include <cmath>
#include <string>

#include "ops/registry.h"

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
  if (__builtin_mul_overflow(w.dilation[d], w.kernel[d] - 1, &span) || __builtin_add_overflow(span, 1, &span))
    return 0;
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
Shape window_counts(const char* name, const WindowAttrs& w, const std::int64_t* spatial, const std::string& what) {
  Shape out;
  for (int d = 0; d < w.s; ++d) {
    const std::int64_t n = windows_along(w, d, spatial[d]);
    KILN_CHECK(n >= 1, name,
               "the window (" + w.str() + ") is larger than the padded " + what + " in spatial dim " +
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
  const Shape counts = window_counts("unfold", w, x.shape.begin() + 2, "input " + describe(x));
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
  const std::string image = "output " + ints_str(w.output_size, w.s);
  const Shape counts = window_counts("fold", w, w.output_size, image);
  const std::int64_t k = kernel_volume(w);
  KILN_CHECK(k > 0 && cols.shape[1] % k == 0, "fold",
             "columns " + describe(cols) + ": dim 1 (" + std::to_string(cols.shape[1]) +
                 ") must be the channel count times prod(kernel) = " + std::to_string(k) + " (" + w.str() + ")");
  KILN_CHECK(cols.shape[2] == counts.numel(), "fold",
             "columns " + describe(cols) + " hold " + std::to_string(cols.shape[2]) + " windows, but " + w.str() +
                 " takes " + counts.str() + " = " + std::to_string(counts.numel()) + " windows of the " + image);
  Shape shape{cols.shape[0], cols.shape[1] / k};
  for (int d = 0; d < w.s; ++d) shape.push_back(w.output_size[d]);
  out.push_back(TensorIr{0, shape, cols.dtype, TensorStatus::NotInit});
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  // Both gather from other positions than they write: never in place.
  r.at(OpKind::unfold).shape_rule = unfold_rule;
  r.at(OpKind::fold).shape_rule = fold_rule;
}

}  // namespace kiln
