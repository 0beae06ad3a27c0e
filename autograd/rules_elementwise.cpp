// Backward rules of the unary elementwise ops and cast; the binary ops, where and clamp are in
// rules_elementwise_binary.cpp. Each rule is the local derivative times the incoming gradient,
// written with public ops so that it fuses with its neighbours. A rule keeps what its
// derivative is cheapest to express with: exp, sqrt, tanh, sigmoid, ... the output; log, sin,
// gelu, ... the input. Integer inputs take no gradient.
#include <cmath>
#include <numbers>

#include "kiln/autograd/rules.h"

namespace kiln::autograd {

void register_elementwise_binary_rules(RuleTable& t);  // rules_elementwise_binary.cpp

namespace {

using Grads = std::vector<Tensor>;
// The gradient of the input from the gradient of the output `dy`.
using LocalRule = Tensor (*)(const ForwardRecord& f, const Tensor& dy);

enum class Saves { nothing, input, output };

template <LocalRule Local>
Grads unary_backward(const ForwardRecord& f, const Grads& grads_out) {
  if (grads_out.empty() || !grads_out[0].defined() || !is_floating(f.input_meta[0].dtype)) return {Tensor()};
  return {Local(f, grads_out[0])};
}

template <LocalRule Local>
BackwardRule unary(Saves saves) {
  return {unary_backward<Local>, saves == Saves::input, saves == Saves::output};
}

const Tensor& x_of(const ForwardRecord& f) { return f.inputs[0]; }
const Tensor& y_of(const ForwardRecord& f) { return f.outputs[0]; }

Tensor d_neg(const ForwardRecord&, const Tensor& dy) { return neg(dy); }
// torch's sgn: abs has gradient 0 at 0.
Tensor d_abs(const ForwardRecord& f, const Tensor& dy) { return mul(dy, sign(x_of(f))); }
Tensor d_exp(const ForwardRecord& f, const Tensor& dy) { return mul(dy, y_of(f)); }
Tensor d_log(const ForwardRecord& f, const Tensor& dy) { return div(dy, x_of(f)); }
Tensor d_log1p(const ForwardRecord& f, const Tensor& dy) { return div(dy, add(x_of(f), 1.0)); }
Tensor d_expm1(const ForwardRecord& f, const Tensor& dy) { return mul(dy, add(y_of(f), 1.0)); }
Tensor d_sqrt(const ForwardRecord& f, const Tensor& dy) { return div(dy, mul(y_of(f), 2.0)); }
Tensor d_rsqrt(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& y = y_of(f);
  return mul(dy, mul(mul(y, square(y)), -0.5));
}
Tensor d_square(const ForwardRecord& f, const Tensor& dy) { return mul(dy, mul(x_of(f), 2.0)); }
Tensor d_reciprocal(const ForwardRecord& f, const Tensor& dy) { return mul(dy, neg(square(y_of(f)))); }
Tensor d_sin(const ForwardRecord& f, const Tensor& dy) { return mul(dy, cos(x_of(f))); }
Tensor d_cos(const ForwardRecord& f, const Tensor& dy) { return mul(dy, neg(sin(x_of(f)))); }
Tensor d_tan(const ForwardRecord& f, const Tensor& dy) { return mul(dy, add(square(y_of(f)), 1.0)); }
Tensor d_tanh(const ForwardRecord& f, const Tensor& dy) { return mul(dy, sub(1.0, square(y_of(f)))); }
Tensor d_sigmoid(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& y = y_of(f);
  return mul(dy, mul(y, sub(1.0, y)));
}
Tensor d_erf(const ForwardRecord& f, const Tensor& dy) {
  return mul(dy, mul(exp(neg(square(x_of(f)))), std::numbers::inv_sqrtpi * 2.0));
}
// torch's threshold_backward on the output: 0 at x = 0.
Tensor d_relu(const ForwardRecord& f, const Tensor& dy) { return where(gt(y_of(f), 0.0), dy, 0.0); }
// The exact (erf) GELU: Phi(x) + x * phi(x).
Tensor d_gelu(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& x = x_of(f);
  Tensor cdf = mul(add(erf(mul(x, 1.0 / std::numbers::sqrt2)), 1.0), 0.5);
  Tensor pdf = mul(exp(mul(square(x), -0.5)), std::numbers::inv_sqrtpi / std::numbers::sqrt2);
  return mul(dy, add(std::move(cdf), mul(x, std::move(pdf))));
}
Tensor d_silu(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& x = x_of(f);
  Tensor s = sigmoid(x);
  Tensor one_minus = sub(1.0, s);
  return mul(dy, mul(std::move(s), add(mul(x, std::move(one_minus)), 1.0)));
}
// softplus (beta 1, threshold 20) is the identity above the threshold, like torch.
Tensor d_softplus(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& x = x_of(f);
  return where(gt(x, 20.0), dy, mul(dy, sigmoid(x)));
}
// floor, ceil, round and sign are piecewise constant: torch's gradient is 0 everywhere.
Tensor d_zero(const ForwardRecord& f, const Tensor& dy) {
  return zeros(f.input_meta[0].shape, {f.input_meta[0].dtype, dy.device()});
}
// The gradient goes back to the input's floating dtype (an f32 -> f32 cast is the identity).
Tensor d_cast(const ForwardRecord& f, const Tensor& dy) { return cast(dy, f.input_meta[0].dtype); }

}  // namespace

void register_elementwise_rules(RuleTable& t) {
  t.set(OpKind::neg, unary<d_neg>(Saves::nothing));
  t.set(OpKind::abs, unary<d_abs>(Saves::input));
  t.set(OpKind::exp, unary<d_exp>(Saves::output));
  t.set(OpKind::log, unary<d_log>(Saves::input));
  t.set(OpKind::log1p, unary<d_log1p>(Saves::input));
  t.set(OpKind::expm1, unary<d_expm1>(Saves::output));
  t.set(OpKind::sqrt, unary<d_sqrt>(Saves::output));
  t.set(OpKind::rsqrt, unary<d_rsqrt>(Saves::output));
  t.set(OpKind::square, unary<d_square>(Saves::input));
  t.set(OpKind::reciprocal, unary<d_reciprocal>(Saves::output));
  t.set(OpKind::sin, unary<d_sin>(Saves::input));
  t.set(OpKind::cos, unary<d_cos>(Saves::input));
  t.set(OpKind::tan, unary<d_tan>(Saves::output));
  t.set(OpKind::tanh, unary<d_tanh>(Saves::output));
  t.set(OpKind::sigmoid, unary<d_sigmoid>(Saves::output));
  t.set(OpKind::erf, unary<d_erf>(Saves::input));
  t.set(OpKind::relu, unary<d_relu>(Saves::output));
  t.set(OpKind::gelu, unary<d_gelu>(Saves::input));
  t.set(OpKind::silu, unary<d_silu>(Saves::input));
  t.set(OpKind::softplus, unary<d_softplus>(Saves::input));
  for (OpKind k : {OpKind::floor, OpKind::ceil, OpKind::round, OpKind::sign}) t.set(k, unary<d_zero>(Saves::nothing));
  t.set(OpKind::cast, unary<d_cast>(Saves::nothing));
  // isnan, isinf and logical_not give bool: not differentiable (no rule).
  register_elementwise_binary_rules(t);
}

}  // namespace kiln::autograd
