// Backward rule of batch_norm (ops/norm.cpp): x, weight, bias -> y, mean, var. The gradient of y
// is one batch_norm_backward op (dx, dweight, dbias), whose kernel reads dy and x once each
// where the composite's rules read them many times; it computes the statistics again from x,
// so the rule keeps the inputs only (not y). The statistics are outputs too; nn's batch_norm
// only reads them detached (the running statistics), but a gradient that reaches them is
// honoured: d mean / dx = 1 / M and d var / dx = 2 (x - mean) / M, per channel.
// batch_norm_backward itself has no rule: kiln takes no gradients of gradients.
#include "kiln/autograd/rules.h"
#include "kiln/engine/submit.h"

namespace kiln::autograd {

namespace {

// [C] -> [1, C, 1, ...] against x of rank `rank`.
Tensor channel_column(Tensor t, int rank) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(rank), 1);
  shape[1] = t.size(0);
  return reshape(std::move(t), shape);
}

std::vector<Tensor> batch_norm_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const Tensor &x = fwd.inputs[0], &weight = fwd.inputs[1];
  std::vector<Tensor> grads(3);
  if (grads_out[0].defined()) {
    Tensor in[3] = {grads_out[0], x, weight};
    grads = detail::submit(OpKind::batch_norm_backward, in, 3, fwd.attrs, x.device());
  }
  const bool d_mean = grads_out.size() > 1 && grads_out[1].defined();
  const bool d_var = grads_out.size() > 2 && grads_out[2].defined();
  if ((d_mean || d_var) && fwd.needs_grad(0)) {
    const int r = x.rank();
    Dims dims{0};
    for (int d = 2; d < r; ++d) dims.push_back(d);
    const double count = static_cast<double>(x.numel() / std::max<std::int64_t>(x.size(1), 1));
    Tensor dx = zeros_like(x);
    if (d_mean) dx = add(std::move(dx), channel_column(div(grads_out[1], count), r));
    if (d_var)
      dx = add(std::move(dx), mul(sub(x, mean(x, dims, true)), channel_column(mul(grads_out[2], 2.0 / count), r)));
    grads[0] = grads[0].defined() ? add(std::move(grads[0]), std::move(dx)) : std::move(dx);
  }
  for (std::size_t i = 0; i < 3; ++i)
    if (!fwd.needs_grad(i)) grads[i] = Tensor{};
  return grads;
}

}  // namespace

void register_norm_rules(RuleTable& t) {
  t.set(OpKind::batch_norm, BackwardRule{batch_norm_backward, /*saves_inputs=*/true, /*saves_outputs=*/false});
}

}  // namespace kiln::autograd
