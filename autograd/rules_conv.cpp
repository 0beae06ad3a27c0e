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
// The gradients carry the size they cannot infer in ConvAttrs::sizes (ops/attrs_window.h).
#include <algorithm>

#include "kiln/autograd/rules.h"
#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_window.h"

namespace kiln::autograd {

namespace {

Window window_of(const Spatial& v, int dims) { return Window(v.begin(), v.begin() + dims); }

std::vector<Tensor> unfold_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const TensorIr& x = fwd.input_meta[0];
  // unfold also moves integer and bool tensors, which take no gradient.
  if (!grads_out[0].defined() || !is_floating(x.dtype)) return {Tensor{}};
  const WindowAttrs w = WindowAttrs::decode(OpKind::unfold, fwd.attrs);
  const Window spatial(x.shape.begin() + 2, x.shape.end());
  return {fold(grads_out[0], spatial, window_of(w.kernel, w.dims), window_of(w.dilation, w.dims),
               window_of(w.padding, w.dims), window_of(w.stride, w.dims))};
}

std::vector<Tensor> fold_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}};
  const WindowAttrs w = WindowAttrs::decode(OpKind::fold, fwd.attrs);
  return {unfold(grads_out[0], window_of(w.kernel, w.dims), window_of(w.dilation, w.dims),
                 window_of(w.padding, w.dims), window_of(w.stride, w.dims), 0.0)};
}

// Op `to`'s attrs from the forward op `from`'s: the same window, and for a gradient op the
// spatial dims of `shape` as its extra sizes.
OpAttrs conv_attrs(OpKind from, const OpAttrs& attrs, OpKind to, const Shape* shape = nullptr) {
  ConvAttrs a = ConvAttrs::decode(from, attrs);
  if (shape) std::copy(shape->begin() + 2, shape->end(), a.sizes.begin());
  return a.encode(to);
}

// x, weight[, bias] -> y.
std::vector<Tensor> conv_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const bool has_bias = fwd.input_meta.size() == 3;
  if (!grads_out[0].defined()) return std::vector<Tensor>(has_bias ? 3 : 2);
  const Tensor &dy = grads_out[0], &x = fwd.inputs[0], &w = fwd.inputs[1];
  // The input's gradient (a transposed convolution) only where it goes somewhere: not for a
  // model's first layer, whose input is the data.
  std::vector<Tensor> grads(has_bias ? 3 : 2);
  if (fwd.needs_grad(0))
    grads[0] = detail::submit2(OpKind::conv_input_grad, dy, w,
                               conv_attrs(fwd.kind, fwd.attrs, OpKind::conv_input_grad, &x.shape()));
  if (fwd.needs_grad(1))
    grads[1] = detail::submit2(OpKind::conv_weight_grad, dy, x,
                               conv_attrs(fwd.kind, fwd.attrs, OpKind::conv_weight_grad, &w.shape()));
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
  return {detail::submit2(OpKind::conv, g, w, conv_attrs(fwd.kind, fwd.attrs, OpKind::conv)),
          detail::submit2(OpKind::conv_weight_grad, dy, g,
                          conv_attrs(fwd.kind, fwd.attrs, OpKind::conv_weight_grad, &w.shape()))};
}

// dy, x -> dw.
std::vector<Tensor> conv_weight_grad_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}, Tensor{}};
  const Tensor &g = grads_out[0], &dy = fwd.inputs[0], &x = fwd.inputs[1];
  return {detail::submit2(OpKind::conv, x, g, conv_attrs(fwd.kind, fwd.attrs, OpKind::conv)),
          detail::submit2(OpKind::conv_input_grad, dy, g,
                          conv_attrs(fwd.kind, fwd.attrs, OpKind::conv_input_grad, &x.shape()))};
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
