// Backward rules of the reduce family. A reduction's message carries its dims normalized
// (attrs.ints: sorted, non-negative, every dim listed when the caller asked for all of them;
// empty only for a 0-d input), so a rule reshapes the incoming gradient to the keepdim shape and
// lets broadcasting spread it over the reduced dims. cumsum, softmax and log_softmax carry a
// non-negative attrs.dim. argmax, argmin, any and all are not differentiable (no rule).
#include "kiln/autograd/rules.h"

namespace kiln::autograd {

namespace {

using Grads = std::vector<Tensor>;

const Shape& in_shape(const ForwardRecord& f) { return f.input_meta[0].shape; }

// The output shape with every reduced dim kept as size 1.
std::vector<std::int64_t> keepdim_shape(const ForwardRecord& f) {
  std::vector<std::int64_t> s = in_shape(f).to_vector();
  for (std::int64_t d : f.attrs.ints) s[static_cast<std::size_t>(d)] = 1;
  return s;
}

// A reduced tensor (the gradient or the output) in the keepdim shape, ready to broadcast.
Tensor kept(const ForwardRecord& f, const Tensor& t) { return f.attrs.keepdim ? t : reshape(t, keepdim_shape(f)); }

// How many input elements went into each output element.
double reduced_count(const ForwardRecord& f) {
  double n = 1.0;
  for (std::int64_t d : f.attrs.ints) n *= static_cast<double>(in_shape(f)[static_cast<int>(d)]);
  return n;
}

Tensor expanded(const ForwardRecord& f, Tensor t) { return expand(std::move(t), in_shape(f).to_vector()); }

// Wraps a rule with the shared preamble: no incoming gradient, or an integer input.
template <Tensor (*Rule)(const ForwardRecord&, const Tensor&)>
Grads reduce_backward(const ForwardRecord& f, const Grads& grads_out) {
  if (grads_out.empty() || !grads_out[0].defined() || !is_floating(f.input_meta[0].dtype)) return {Tensor()};
  return {Rule(f, grads_out[0])};
}

template <Tensor (*Rule)(const ForwardRecord&, const Tensor&)>
BackwardRule rule(bool saves_inputs, bool saves_outputs) {
  return {reduce_backward<Rule>, saves_inputs, saves_outputs};
}

Tensor sum_bw(const ForwardRecord& f, const Tensor& dy) { return expanded(f, kept(f, dy)); }

Tensor mean_bw(const ForwardRecord& f, const Tensor& dy) {
  return expanded(f, mul(kept(f, dy), 1.0 / reduced_count(f)));
}

// Exact with zeros, like torch: with no zero in a group, each element gets dy * prod / x; with
// one zero, that element gets dy * (product of the others) and the rest 0; with more, all 0.
// The product of the non-zero elements covers all three cases without dividing by zero.
Tensor prod_bw(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& x = f.inputs[0];
  const Dims& dims = f.attrs.ints;
  Tensor is_zero = eq(x, 0.0);
  Tensor zero_count = sum(is_zero, dims, /*keepdim=*/true);
  Tensor g_nonzero = mul(kept(f, dy), prod(where(is_zero, 1.0, x), dims, /*keepdim=*/true));
  Tensor lone_zero = logical_and(std::move(is_zero), eq(zero_count, 1.0));
  return where(eq(zero_count, 0.0), div(g_nonzero, x), where(std::move(lone_zero), g_nonzero, 0.0));
}

// max/min over one dim of a tensor with more dims (torch.max(x, dim)): the whole gradient goes
// to the first extremum, the index argmax/argmin returns. Over several or all dims (torch.max(x),
// torch.amax): split evenly among the elements equal to the result.
template <bool Maximum>
Tensor extremum_bw(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& x = f.inputs[0];
  const Dims& dims = f.attrs.ints;
  Tensor g = kept(f, dy);
  if (dims.size() == 1 && static_cast<int>(dims.size()) < in_shape(f).rank()) {
    const std::int64_t d = dims[0];
    Tensor index = Maximum ? argmax(x, d, /*keepdim=*/true) : argmin(x, d, /*keepdim=*/true);
    std::vector<std::int64_t> along(static_cast<std::size_t>(in_shape(f).rank()), 1);
    along[static_cast<std::size_t>(d)] = in_shape(f)[static_cast<int>(d)];
    Tensor position =
        reshape(arange(static_cast<double>(along[static_cast<std::size_t>(d)]), {DType::i64, x.device()}), along);
    return where(eq(std::move(position), std::move(index)), std::move(g), 0.0);
  }
  Tensor hit = eq(x, kept(f, f.outputs[0]));
  Tensor ties = sum(hit, dims, /*keepdim=*/true);
  return where(std::move(hit), div(std::move(g), std::move(ties)), 0.0);
}

// var: dy * 2 (x - mean) / (N - correction).
Tensor var_bw(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& x = f.inputs[0];
  Tensor centered = sub(x, mean(x, f.attrs.ints, /*keepdim=*/true));
  return mul(std::move(centered), mul(kept(f, dy), 2.0 / (reduced_count(f) - f.attrs.scalar)));
}

// std: var's gradient with dy / (2 std), which torch sets to 0 where std is 0.
Tensor std_bw(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& x = f.inputs[0];
  Tensor y = kept(f, f.outputs[0]);
  Tensor dvar = where(eq(y, 0.0), 0.0, div(kept(f, dy), y));
  Tensor centered = sub(x, mean(x, f.attrs.ints, /*keepdim=*/true));
  return mul(std::move(centered), mul(std::move(dvar), 1.0 / (reduced_count(f) - f.attrs.scalar)));
}

// logsumexp: dy * softmax(x) over the reduced dims = dy * exp(x - y).
Tensor logsumexp_bw(const ForwardRecord& f, const Tensor& dy) {
  return mul(kept(f, dy), exp(sub(f.inputs[0], kept(f, f.outputs[0]))));
}

// cumsum: the reversed cumulative sum of the gradient.
Tensor cumsum_bw(const ForwardRecord& f, const Tensor& dy) {
  if (in_shape(f).rank() == 0) return dy;
  const std::vector<std::int64_t> d{f.attrs.dim};
  return flip(cumsum(flip(dy, d), f.attrs.dim), d);
}

// softmax: y * (dy - sum(dy * y)) along the dim.
Tensor softmax_bw(const ForwardRecord& f, const Tensor& dy) {
  const Tensor& y = f.outputs[0];
  Tensor dot = sum(mul(dy, y), {f.attrs.dim}, /*keepdim=*/true);
  return mul(y, sub(dy, std::move(dot)));
}

// log_softmax: dy - exp(y) * sum(dy) along the dim.
Tensor log_softmax_bw(const ForwardRecord& f, const Tensor& dy) {
  return sub(dy, mul(exp(f.outputs[0]), sum(dy, {f.attrs.dim}, /*keepdim=*/true)));
}

}  // namespace

void register_reduce_rules(RuleTable& t) {
  t.set(OpKind::sum, rule<sum_bw>(false, false));
  t.set(OpKind::mean, rule<mean_bw>(false, false));
  t.set(OpKind::prod, rule<prod_bw>(true, false));
  t.set(OpKind::max, rule<extremum_bw<true>>(true, true));
  t.set(OpKind::min, rule<extremum_bw<false>>(true, true));
  t.set(OpKind::var, rule<var_bw>(true, false));
  t.set(OpKind::std, rule<std_bw>(true, true));
  t.set(OpKind::logsumexp, rule<logsumexp_bw>(true, true));
  t.set(OpKind::cumsum, rule<cumsum_bw>(false, false));
  t.set(OpKind::softmax, rule<softmax_bw>(false, true));
  t.set(OpKind::log_softmax, rule<log_softmax_bw>(false, true));
}

}  // namespace kiln::autograd
