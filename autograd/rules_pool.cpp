// Backward rules of the pooling ops. max_pool's values are x at the indices it outputs, so its
// gradient adds each dy into the element its window chose: max_pool_grad(dy, indices), which
// reads the indices the rule saves (the values are saved along with them: a rule keeps whole
// outputs). avg_pool's is avg_pool_grad(dy): each dy divided by its window's divisor and added
// into every element of the window. Both carry the input's spatial size, which dy does not fix,
// in PoolAttrs::input_size (ops/attrs_window.h). The gradient ops themselves take no gradient.
#include <algorithm>

#include "kiln/autograd/rules.h"
#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_window.h"

namespace kiln::autograd {

namespace {

// The gradient op's attrs: the forward's window and the input's spatial size.
OpAttrs grad_attrs(const ForwardRecord& fwd, OpKind grad) {
  PoolAttrs a = PoolAttrs::decode(fwd.kind, fwd.attrs);
  const Shape& x = fwd.input_meta[0].shape;
  std::copy(x.begin() + 2, x.end(), a.input_size.begin());
  return a.encode(grad);
}

// x -> values, indices.
std::vector<Tensor> max_pool_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}};
  KILN_CHECK(fwd.outputs.size() == 2, "backward", "internal error: max_pool was recorded without its indices");
  return {detail::submit2(OpKind::max_pool_grad, grads_out[0], fwd.outputs[1], grad_attrs(fwd, OpKind::max_pool_grad))};
}

std::vector<Tensor> avg_pool_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}};
  return {detail::submit1(OpKind::avg_pool_grad, grads_out[0], grad_attrs(fwd, OpKind::avg_pool_grad))};
}

}  // namespace

void register_pool_rules(RuleTable& t) {
  t.set(OpKind::max_pool, BackwardRule{max_pool_backward, /*saves_inputs=*/false, /*saves_outputs=*/true});
  t.set(OpKind::avg_pool, BackwardRule{avg_pool_backward, false, false});
}

}  // namespace kiln::autograd
