// Backward rules of the index family. The gradient goes back along the same indices the
// forward used: what gather read is scatter-added back, what scatter wrote is gathered (and
// zeroed in x), sort and topk send each value's gradient to the place its index names. The
// rules save the index tensors they need (an input, or the indices output of sort and topk),
// never x's values. one_hot has integer output and no rule.
#include "kiln/autograd/rules.h"
#include "kiln/ops/attrs_index.h"

namespace kiln::autograd {

namespace {

Tensor zeros_of(const TensorIr& meta, const Tensor& like) {
  return zeros(meta.shape, TensorOptions{meta.dtype, like.device()});
}

// gather(g, dim, index) has index's shape; src may be larger than index (only index's part of
// it was read) and, as in torch, a 0-d tensor counts as 1-D of size 1. Untouched places of src
// get zeros.
Tensor to_src_shape(Tensor g, const Shape& src) {
  if (g.shape() == src) return g;
  if (g.numel() == 0) return zeros(src, TensorOptions{g.dtype(), g.device()});
  if (g.rank() == 0 || src.rank() == 0)
    g = reshape(std::move(g), src.rank() == 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{1});
  if (g.shape() == src) return g;
  std::vector<std::int64_t> pads;
  for (int d = src.rank() - 1; d >= 0; --d) pads.insert(pads.end(), {0, src[d] - g.shape()[d]});
  return pad(std::move(g), pads, 0.0);
}

// gather(x, dim, index): x's gradient is the output's gradient added at the places it was read.
std::vector<Tensor> gather_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const TensorIr& x = fwd.input_meta[0];
  if (!grads_out[0].defined() || !is_floating(x.dtype)) return {Tensor{}, Tensor{}};
  return {scatter_add(zeros_of(x, grads_out[0]), fwd.attrs.dim, fwd.inputs[1], grads_out[0]), Tensor{}};
}

// scatter(x, dim, index, src): the places src overwrote get no gradient in x; src gets the
// gradient of the places it was written to.
std::vector<Tensor> scatter_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const Tensor& g = grads_out[0];
  if (!g.defined() || !is_floating(fwd.input_meta[0].dtype)) return {Tensor{}, Tensor{}, Tensor{}};
  const Tensor& index = fwd.inputs[1];
  Tensor gx = scatter(g, fwd.attrs.dim, index, zeros(index.shape(), TensorOptions{g.dtype(), g.device()}));
  Tensor gsrc = to_src_shape(gather(g, fwd.attrs.dim, index), fwd.input_meta[2].shape);
  return {std::move(gx), Tensor{}, std::move(gsrc)};
}

// scatter_add(x, dim, index, src): x passes through unchanged, src as for scatter.
std::vector<Tensor> scatter_add_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const Tensor& g = grads_out[0];
  if (!g.defined() || !is_floating(fwd.input_meta[0].dtype)) return {Tensor{}, Tensor{}, Tensor{}};
  Tensor gsrc = to_src_shape(gather(g, fwd.attrs.dim, fwd.inputs[1]), fwd.input_meta[2].shape);
  return {g, Tensor{}, std::move(gsrc)};
}

// index_select(x, dim, index): the gradient's slices are added back at the selected positions
// (an index_add), written as a scatter_add whose index is the 1-D index spread over the other dims.
std::vector<Tensor> index_select_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const TensorIr& x = fwd.input_meta[0];
  const Tensor& g = grads_out[0];
  if (!g.defined() || !is_floating(x.dtype)) return {Tensor{}, Tensor{}};
  // A 0-d x has one element, which its only valid index selects.
  if (x.shape.rank() == 0) return {g, Tensor{}};
  const int dim = normalize_dim("index_select", fwd.attrs.dim, x.shape.rank());
  std::vector<std::int64_t> spread(static_cast<std::size_t>(x.shape.rank()), 1);
  spread[static_cast<std::size_t>(dim)] = fwd.inputs[1].numel();
  Tensor index = expand(reshape(fwd.inputs[1], spread), g.shape().to_vector());
  return {scatter_add(zeros_of(x, g), dim, std::move(index), g), Tensor{}};
}

// masked_fill(x, mask, value): the filled places no longer depend on x.
std::vector<Tensor> masked_fill_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined() || !is_floating(fwd.input_meta[0].dtype)) return {Tensor{}, Tensor{}};
  return {where(fwd.inputs[1], 0.0, grads_out[0]), Tensor{}};
}

// sort and topk: values[j] = x[indices[j]] along dim, indices distinct, so the values'
// gradient is scattered into zeros through the indices output (output 1).
std::vector<Tensor> select_values_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const TensorIr& x = fwd.input_meta[0];
  const Tensor& g = grads_out[0];
  if (!g.defined() || !is_floating(x.dtype)) return {Tensor{}};
  // A 0-d x is its own single value (topk with k = 0 keeps it 0-d too, and selects nothing).
  if (x.shape.rank() == 0) return {fwd.kind == OpKind::topk && TopkAttrs::decode(fwd.kind, fwd.attrs).k == 0 ? zeros_of(x, g) : g};
  return {scatter(zeros_of(x, g), fwd.attrs.dim, fwd.outputs[1], g)};
}

}  // namespace

void register_index_rules(RuleTable& t) {
  // The index-taking ops save their inputs for the index (and masked_fill for the mask); sort
  // and topk save their outputs for the indices. one_hot stays without a rule: integer output.
  t.set(OpKind::gather, BackwardRule{gather_backward, /*saves_inputs=*/true, /*saves_outputs=*/false});
  t.set(OpKind::scatter, BackwardRule{scatter_backward, true, false});
  t.set(OpKind::scatter_add, BackwardRule{scatter_add_backward, true, false});
  t.set(OpKind::index_select, BackwardRule{index_select_backward, true, false});
  t.set(OpKind::masked_fill, BackwardRule{masked_fill_backward, true, false});
  t.set(OpKind::sort, BackwardRule{select_values_backward, false, true});
  t.set(OpKind::topk, BackwardRule{select_values_backward, false, true});
}

}  // namespace kiln::autograd
