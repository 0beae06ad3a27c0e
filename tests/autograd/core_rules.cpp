#include "core_rules.h"

#include <numeric>

namespace kiln::test {
namespace {

using autograd::ForwardRecord;
using autograd::sum_to;
using Grads = std::vector<Tensor>;

bool scalar_form(const ForwardRecord& f) { return f.attrs.scalar_side != ScalarSide::None; }
const Shape& in_shape(const ForwardRecord& f, std::size_t i) { return f.input_meta[i].shape; }

Grads add_rule(const ForwardRecord& f, const Grads& g) {
  if (scalar_form(f)) return {g[0]};
  return {sum_to(g[0], in_shape(f, 0)), sum_to(g[0], in_shape(f, 1))};
}

Grads sub_rule(const ForwardRecord& f, const Grads& g) {
  if (scalar_form(f)) return {f.attrs.scalar_side == ScalarSide::Rhs ? g[0] : neg(g[0])};
  return {sum_to(g[0], in_shape(f, 0)), sum_to(neg(g[0]), in_shape(f, 1))};
}

Grads mul_rule(const ForwardRecord& f, const Grads& g) {
  if (scalar_form(f)) return {mul(g[0], f.attrs.scalar)};
  return {sum_to(mul(g[0], f.inputs[1]), in_shape(f, 0)), sum_to(mul(g[0], f.inputs[0]), in_shape(f, 1))};
}

Grads matmul_rule(const ForwardRecord& f, const Grads& g) {  // 2-D operands only
  return {matmul(g[0], transpose(f.inputs[1], 0, 1)), matmul(transpose(f.inputs[0], 0, 1), g[0])};
}

Grads relu_rule(const ForwardRecord& f, const Grads& g) { return {where(gt(f.inputs[0], 0.0), g[0], 0.0)}; }
Grads exp_rule(const ForwardRecord& f, const Grads& g) { return {mul(g[0], f.outputs[0])}; }
Grads sigmoid_rule(const ForwardRecord& f, const Grads& g) {
  return {mul(mul(g[0], f.outputs[0]), sub(1.0, f.outputs[0]))};
}

// The gradient of a reduction, broadcast back over the reduced dims.
Tensor spread(const ForwardRecord& f, const Tensor& g) {
  const Shape& in = in_shape(f, 0);
  std::vector<std::int64_t> kept = in.to_vector();
  const auto& dims = f.attrs.ints;
  for (int d = 0; d < in.rank(); ++d) {
    bool reduced = dims.empty();
    for (std::int64_t r : dims) reduced |= (r < 0 ? r + in.rank() : r) == d;
    if (reduced) kept[static_cast<std::size_t>(d)] = 1;
  }
  return expand(reshape(g, kept), in.to_vector());
}

Grads sum_rule(const ForwardRecord& f, const Grads& g) { return {spread(f, g[0])}; }
Grads mean_rule(const ForwardRecord& f, const Grads& g) {
  const double count = static_cast<double>(in_shape(f, 0).numel()) / static_cast<double>(f.output_meta[0].numel());
  return {div(spread(f, g[0]), count)};
}

Grads reshape_rule(const ForwardRecord& f, const Grads& g) { return {reshape(g[0], in_shape(f, 0).to_vector())}; }
Grads permute_rule(const ForwardRecord& f, const Grads& g) {
  std::vector<std::int64_t> inverse(f.attrs.ints.size());
  for (std::size_t i = 0; i < inverse.size(); ++i)
    inverse[static_cast<std::size_t>(f.attrs.ints[i])] = static_cast<std::int64_t>(i);
  return {permute(g[0], inverse)};
}

}  // namespace

const autograd::RuleTable& core_rules() {
  static const autograd::RuleTable table = [] {
    autograd::RuleTable t;
    t.set(OpKind::add, {add_rule});
    t.set(OpKind::sub, {sub_rule});
    t.set(OpKind::mul, {mul_rule, /*saves_inputs=*/true});
    t.set(OpKind::matmul, {matmul_rule, true});
    t.set(OpKind::relu, {relu_rule, true});
    t.set(OpKind::exp, {exp_rule, false, /*saves_outputs=*/true});
    t.set(OpKind::sigmoid, {sigmoid_rule, false, true});
    t.set(OpKind::sum, {sum_rule});
    t.set(OpKind::mean, {mean_rule});
    t.set(OpKind::reshape, {reshape_rule});
    t.set(OpKind::permute, {permute_rule});
    return t;
  }();
  return table;
}

}  // namespace kiln::test
