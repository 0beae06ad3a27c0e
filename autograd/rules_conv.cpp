// Backward rules of unfold and fold: each is the other's adjoint. unfold copies every image
// element into the columns of the windows that cover it (or drops it), so its gradient adds
// those columns back: fold over the input's spatial size with the same window. fold adds the
// columns into the image, so each column's gradient is the image gradient at the place it was
// added to, and zero where it fell in the padding: unfold with pad value 0. Neither reads the
// forward's values; the window is in the record's attrs.
#include "autograd/rules.h"

namespace kiln::autograd {

namespace {

struct WindowArgs {
  Window kernel, dilation, padding, stride, output_size;
};

// ints = [s, kernel[s], dilation[s], padding[s], stride[s]] (fold: then output_size[s]).
WindowArgs window_args(const OpAttrs& attrs) {
  const auto& ints = attrs.ints;
  const auto s = static_cast<std::ptrdiff_t>(ints[0]);
  const auto group = [&](std::ptrdiff_t i) { return Window(ints.begin() + 1 + i * s, ints.begin() + 1 + (i + 1) * s); };
  WindowArgs w{group(0), group(1), group(2), group(3), {}};
  if (static_cast<std::ptrdiff_t>(ints.size()) >= 1 + 5 * s) w.output_size = group(4);
  return w;
}

std::vector<Tensor> unfold_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const TensorIr& x = fwd.input_meta[0];
  // unfold also moves integer and bool tensors, which take no gradient.
  if (!grads_out[0].defined() || !is_floating(x.dtype)) return {Tensor{}};
  const WindowArgs w = window_args(fwd.attrs);
  const Window spatial(x.shape.begin() + 2, x.shape.end());
  return {fold(grads_out[0], spatial, w.kernel, w.dilation, w.padding, w.stride)};
}

std::vector<Tensor> fold_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}};
  const WindowArgs w = window_args(fwd.attrs);
  return {unfold(grads_out[0], w.kernel, w.dilation, w.padding, w.stride, 0.0)};
}

}  // namespace

void register_conv_rules(RuleTable& t) {
  t.set(OpKind::unfold, BackwardRule{unfold_backward, false, false});
  t.set(OpKind::fold, BackwardRule{fold_backward, false, false});
}

}  // namespace kiln::autograd
