// Backward rules of the binary elementwise ops (tensor and scalar forms), where and clamp.
// A tensor-tensor op broadcasts, so each input's gradient is summed back to its own shape
// (sum_to). A scalar form has one tensor input: attrs.scalar_side Rhs is `x op s`, Lhs is
// `s op x`. The conventions at kinks follow torch 1.13: maximum/minimum split the gradient
// evenly on ties, clamp passes it at the bounds, pow's exponent gradient is 0 where the base is
// 0 and the exponent >= 0 (NaN for a negative base), remainder's divisor gets -floor(a / b).
#include <cmath>

#include "kiln/autograd/rules.h"
#include "kiln/ops/attrs_elementwise.h"

namespace kiln::autograd {

namespace {

using Grads = std::vector<Tensor>;

bool no_gradient(const Grads& grads_out) { return grads_out.empty() || !grads_out[0].defined(); }
bool takes_gradient(const ForwardRecord& f, std::size_t i) { return is_floating(f.input_meta[i].dtype); }
bool scalar_form(const ForwardRecord& f) { return f.attrs.scalar_side != ScalarSide::None; }

// The gradient of input i, summed back to its shape; undefined when it takes none. `make` is
// only called for inputs that take a gradient.
template <class Make>
Tensor grad_of(const ForwardRecord& f, std::size_t i, Make make) {
  if (!takes_gradient(f, i)) return Tensor();
  return sum_to(make(), f.input_meta[i].shape);
}

// Wraps a rule with the shared preamble: no incoming gradient, no input gradients.
template <Grads (*Rule)(const ForwardRecord&, const Tensor&)>
Grads binary_backward(const ForwardRecord& f, const Grads& grads_out) {
  if (no_gradient(grads_out)) return Grads(f.input_meta.size());
  return Rule(f, grads_out[0]);
}

template <Grads (*Rule)(const ForwardRecord&, const Tensor&)>
BackwardRule rule(bool saves_inputs) {
  return {binary_backward<Rule>, saves_inputs, false};
}

Grads add_bw(const ForwardRecord& f, const Tensor& dy) {
  if (scalar_form(f)) return {grad_of(f, 0, [&] { return dy; })};
  return Grads{grad_of(f, 0, [&] { return dy; }), grad_of(f, 1, [&] { return dy; })};
}

Grads sub_bw(const ForwardRecord& f, const Tensor& dy) {
  if (scalar_form(f)) return {grad_of(f, 0, [&] { return f.attrs.scalar_side == ScalarSide::Rhs ? dy : neg(dy); })};
  return Grads{grad_of(f, 0, [&] { return dy; }), grad_of(f, 1, [&] { return neg(dy); })};
}

Grads mul_bw(const ForwardRecord& f, const Tensor& dy) {
  if (scalar_form(f)) return {grad_of(f, 0, [&] { return mul(dy, f.attrs.scalar); })};
  const Tensor &a = f.inputs[0], &b = f.inputs[1];
  return Grads{grad_of(f, 0, [&] { return mul(dy, b); }), grad_of(f, 1, [&] { return mul(dy, a); })};
}

Grads div_bw(const ForwardRecord& f, const Tensor& dy) {
  const double s = f.attrs.scalar;
  if (f.attrs.scalar_side == ScalarSide::Rhs) return {grad_of(f, 0, [&] { return div(dy, s); })};
  if (f.attrs.scalar_side == ScalarSide::Lhs)  // s / x
    return {grad_of(f, 0, [&] { return div(mul(dy, -s), square(f.inputs[0])); })};
  const Tensor &a = f.inputs[0], &b = f.inputs[1];
  return Grads{grad_of(f, 0, [&] { return div(dy, b); }),
               grad_of(f, 1, [&] { return neg(div(mul(dy, a), square(b))); })};
}

// d(a^b)/da = b a^(b-1), 0 where b == 0 (also at a = 0).
Tensor pow_base_grad(const Tensor& dy, const Tensor& a, const Tensor& b) {
  return where(eq(b, 0.0), 0.0, mul(dy, mul(b, pow(a, sub(b, 1.0)))));
}

// d(a^b)/db = a^b log(a), 0 where a == 0 and b >= 0 (NaN for a < 0, like torch).
Tensor pow_exponent_grad(const Tensor& dy, const Tensor& a, const Tensor& b) {
  Tensor base_zero = logical_and(eq(a, 0.0), ge(b, 0.0));
  return mul(dy, where(std::move(base_zero), 0.0, mul(pow(a, b), log(a))));
}

Grads pow_bw(const ForwardRecord& f, const Tensor& dy) {
  const double s = f.attrs.scalar;
  const Tensor& x = f.inputs[0];
  if (f.attrs.scalar_side == ScalarSide::Rhs)  // x^s
    return {grad_of(f, 0, [&] {
      return s == 0.0 ? zeros(f.input_meta[0].shape, {f.input_meta[0].dtype, dy.device()})
                      : mul(dy, mul(pow(x, s - 1.0), s));
    })};
  if (f.attrs.scalar_side == ScalarSide::Lhs)  // s^x: s^x log(s), 0 where s == 0 and x >= 0
    return {grad_of(f, 0, [&] {
      Tensor g = mul(dy, mul(pow(s, x), std::log(s)));
      return s == 0.0 ? where(ge(x, 0.0), 0.0, std::move(g)) : g;
    })};
  const Tensor& b = f.inputs[1];
  return Grads{grad_of(f, 0, [&] { return pow_base_grad(dy, x, b); }),
               grad_of(f, 1, [&] { return pow_exponent_grad(dy, x, b); })};
}

Grads remainder_bw(const ForwardRecord& f, const Tensor& dy) {
  const double s = f.attrs.scalar;
  if (f.attrs.scalar_side == ScalarSide::Rhs) return {grad_of(f, 0, [&] { return dy; })};
  if (f.attrs.scalar_side == ScalarSide::Lhs)  // s mod x
    return {grad_of(f, 0, [&] { return neg(mul(dy, floor(div(s, f.inputs[0])))); })};
  const Tensor &a = f.inputs[0], &b = f.inputs[1];
  return Grads{grad_of(f, 0, [&] { return dy; }), grad_of(f, 1, [&] { return neg(mul(dy, floor(div(a, b)))); })};
}

// torch 1.13: where(a == b, dy / 2, dy), zeroed where `a` loses (a < b for maximum).
template <bool Maximum>
Tensor extremum_grad(const Tensor& dy, const Tensor& a, const Tensor& b) {
  Tensor loses = Maximum ? lt(a, b) : gt(a, b);
  return where(std::move(loses), 0.0, where(eq(a, b), mul(dy, 0.5), dy));
}
template <bool Maximum>
Tensor extremum_grad(const Tensor& dy, const Tensor& a, double b) {
  Tensor loses = Maximum ? lt(a, b) : gt(a, b);
  return where(std::move(loses), 0.0, where(eq(a, b), mul(dy, 0.5), dy));
}

// The scalar forms split ties like the tensor form against a 0-d tensor: both sides are the same
// because maximum and minimum are symmetric.
template <bool Maximum>
Grads extremum_bw(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& a = f.inputs[0];
  if (scalar_form(f)) return {grad_of(f, 0, [&] { return extremum_grad<Maximum>(dy, a, f.attrs.scalar); })};
  const Tensor& b = f.inputs[1];
  return Grads{grad_of(f, 0, [&] { return extremum_grad<Maximum>(dy, a, b); }),
               grad_of(f, 1, [&] { return extremum_grad<Maximum>(dy, b, a); })};
}

// atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2).
Grads atan2_bw(const ForwardRecord& f, const Tensor& dy) {
  const double s = f.attrs.scalar;
  const Tensor& x = f.inputs[0];
  if (f.attrs.scalar_side == ScalarSide::Rhs)
    return {grad_of(f, 0, [&] { return div(mul(dy, s), add(square(x), s * s)); })};
  if (f.attrs.scalar_side == ScalarSide::Lhs)
    return {grad_of(f, 0, [&] { return div(mul(dy, -s), add(square(x), s * s)); })};
  const Tensor& b = f.inputs[1];
  Tensor denom = add(square(x), square(b));
  return Grads{grad_of(f, 0, [&] { return div(mul(dy, b), denom); }),
               grad_of(f, 1, [&] { return neg(div(mul(dy, x), denom)); })};
}

// where(cond, a, b): the condition takes no gradient.
Grads where_bw(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& cond = f.inputs[0];
  return {Tensor(), grad_of(f, 1, [&] { return where(cond, dy, 0.0); }),
          grad_of(f, 2, [&] { return where(cond, 0.0, dy); })};
}

// The gradient passes where min <= x <= max (at the bounds too, like torch); NaN blocks it.
Grads clamp_bw(const ForwardRecord& f, const Tensor& dy) {
  return {grad_of(f, 0, [&] {
    const Tensor& x = f.inputs[0];
    const ClampAttrs c = ClampAttrs::decode(f.kind, f.attrs);
    Tensor inside;
    if (c.has_min) inside = ge(x, c.min);
    if (c.has_max) {
      Tensor below = le(x, c.max);
      inside = inside.defined() ? logical_and(std::move(inside), std::move(below)) : std::move(below);
    }
    return where(std::move(inside), dy, 0.0);
  })};
}

}  // namespace

void register_elementwise_binary_rules(RuleTable& t) {
  t.set(OpKind::add, rule<add_bw>(false));
  t.set(OpKind::sub, rule<sub_bw>(false));
  t.set(OpKind::mul, rule<mul_bw>(true));
  t.set(OpKind::div, rule<div_bw>(true));
  t.set(OpKind::pow, rule<pow_bw>(true));
  t.set(OpKind::remainder, rule<remainder_bw>(true));
  t.set(OpKind::maximum, rule<extremum_bw<true>>(true));
  t.set(OpKind::minimum, rule<extremum_bw<false>>(true));
  t.set(OpKind::atan2, rule<atan2_bw>(true));
  t.set(OpKind::where, rule<where_bw>(true));
  t.set(OpKind::clamp, rule<clamp_bw>(true));
  // Comparisons and logical ops give bool: not differentiable (no rule).
}

}  // namespace kiln::autograd
