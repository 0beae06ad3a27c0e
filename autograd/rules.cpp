#include "kiln/autograd/rules.h"

namespace kiln::autograd {

const RuleTable& backward_rules() {
  static const RuleTable table = [] {
    RuleTable t;
    register_elementwise_rules(t);
    register_reduce_rules(t);
    register_linalg_rules(t);
    register_layout_rules(t);
    register_conv_rules(t);
    register_pool_rules(t);
    register_index_rules(t);
    register_norm_rules(t);
    return t;
  }();
  return table;
}

Tensor sum_to(Tensor grad, const Shape& shape) {
  const Shape& g = grad.shape();
  if (g == shape) return grad;
  // Leading dims that broadcasting added, then dims that were 1 and got expanded.
  const int lead = g.rank() - shape.rank();
  Dims dims;
  for (int d = 0; d < g.rank(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g[d] != 1)) dims.push_back(d);
  Tensor s = dims.empty() ? std::move(grad) : sum(std::move(grad), dims, /*keepdim=*/true);
  return reshape(std::move(s), shape.to_vector());
}

}  // namespace kiln::autograd
