// Backward rules of the conv family. unfold and fold: each is the other's adjoint. unfold copies every image
// element into the columns of the windows that cover it (or drops it), so its gradient adds
// those columns back: fold over the input's spatial size with the same window. fold adds the
// columns into the image, so each column's gradient is the image gradient at the place it was
// added to, and zero where it fell in the padding: unfold with pad value 0. Neither reads the
// forward's values; the window is in the record's attrs.
//
// conv, conv_input_grad and conv_weight_grad (engine/conv.cpp's convolution) are one
// bilinear form <dy, conv(x, w)> read three ways, so each one's gradients are the other two:
// conv's are conv_input_grad(dy, w) and conv_weight_grad(dy, x) (and dy summed over all but the
// channel dim for the bias). The weight gradient reads x again rather than keeping columns.
// The gradients append to the forward's ints the size they cannot infer (ops/op_list.def).
#include "kiln/autograd/rules.h"
#include "kiln/engine/submit.h"

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

// The ints every conv op starts with: [s, stride[s], padding[s], dilation[s], groups].
OpAttrs conv_attrs(const OpAttrs& attrs) {
  OpAttrs a;
  const auto s = static_cast<std::ptrdiff_t>(attrs.ints[0]);
  a.ints.assign(attrs.ints.begin(), attrs.ints.begin() + 2 + 3 * s);
  return a;
}

// The same, with the spatial dims of `shape` appended: a gradient op's extra sizes.
OpAttrs conv_attrs(const OpAttrs& attrs, const Shape& shape) {
  OpAttrs a = conv_attrs(attrs);
  a.ints.insert(a.ints.end(), shape.begin() + 2, shape.end());
  return a;
}

// x, weight[, bias] -> y.
std::vector<Tensor> conv_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const bool has_bias = fwd.input_meta.size() == 3;
  if (!grads_out[0].defined()) return std::vector<Tensor>(has_bias ? 3 : 2);
  const Tensor &dy = grads_out[0], &x = fwd.inputs[0], &w = fwd.inputs[1];
  // The input's gradient (a transposed convolution) only where it goes somewhere: not for a
  // model's first layer, whose input is the data.
  std::vector<Tensor> grads(has_bias ? 3 : 2);
  if (fwd.needs_grad(0)) grads[0] = detail::submit2(OpKind::conv_input_grad, dy, w, conv_attrs(fwd.attrs, x.shape()));
  if (fwd.needs_grad(1)) grads[1] = detail::submit2(OpKind::conv_weight_grad, dy, x, conv_attrs(fwd.attrs, w.shape()));
  if (has_bias && fwd.needs_grad(2)) {
    Dims dims{0};
    for (int d = 2; d < dy.rank(); ++d) dims.push_back(d);
    grads[2] = sum(dy, dims);
  }
  return grads;
}

// dy, weight -> dx.
std::vector<Tensor> conv_input_grad_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}, Tensor{}};
  const Tensor &g = grads_out[0], &dy = fwd.inputs[0], &w = fwd.inputs[1];
  return {detail::submit2(OpKind::conv, g, w, conv_attrs(fwd.attrs)),
          detail::submit2(OpKind::conv_weight_grad, dy, g, conv_attrs(fwd.attrs, w.shape()))};
}

// dy, x -> dw.
std::vector<Tensor> conv_weight_grad_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}, Tensor{}};
  const Tensor &g = grads_out[0], &dy = fwd.inputs[0], &x = fwd.inputs[1];
  return {detail::submit2(OpKind::conv, x, g, conv_attrs(fwd.attrs)),
          detail::submit2(OpKind::conv_input_grad, dy, g, conv_attrs(fwd.attrs, x.shape()))};
}

}  // namespace

void register_conv_rules(RuleTable& t) {
  t.set(OpKind::unfold, BackwardRule{unfold_backward, false, false});
  t.set(OpKind::fold, BackwardRule{fold_backward, false, false});
  t.set(OpKind::conv, BackwardRule{conv_backward, /*saves_inputs=*/true, false});
  t.set(OpKind::conv_input_grad, BackwardRule{conv_input_grad_backward, /*saves_inputs=*/true, false});
  t.set(OpKind::conv_weight_grad, BackwardRule{conv_weight_grad_backward, /*saves_inputs=*/true, false});
}

}  // namespace kiln::autograd
