// Regression, binary, KL-divergence and margin losses as elementwise compositions followed by
// the reduction (cross_entropy and nll_loss: loss_classification_functional.cpp). Branches are
// chosen with `where` on the distance, and each branch stays finite where it is not taken, so
// gradients have no NaN from the unused side.
#include "kiln/nn/loss.h"

#include <string>

#include "kiln/nn/functional_detail.h"

namespace kiln::nn {
namespace {

// Throws unless `t` is undefined or broadcasts to `shape` without growing it.
void check_broadcasts_to(const char* op, const char* what, const Tensor& t, const Tensor& input) {
  if (!t.defined()) return;
  detail::check_float(op, what, t);
  bool fits = t.rank() <= input.rank();
  for (int i = 1; fits && i <= t.rank(); ++i) {
    const std::int64_t d = t.shape()[t.rank() - i];
    fits = d == 1 || d == input.shape()[input.rank() - i];
  }
  KILN_CHECK(fits, op, std::string(what) + " " + t.shape().str() + " must broadcast to input " + input.shape().str());
}

// Checks the pair and the reduction, and returns input - target.
Tensor difference(const char* op, Tensor input, Tensor target, Reduction reduction) {
  detail::check_reduction(op, reduction);
  detail::check_same_shape(op, "input", input, "target", target);
  return sub(std::move(input), std::move(target));
}

// Throws unless y has a numeric dtype (a ±1 label may be f32 or i64).
void check_label(const char* op, const Tensor& y) {
  KILN_CHECK(y.defined() && y.dtype() != DType::bool_, op,
             "target must be a numeric tensor of 1 / -1, got " +
                 (y.defined() ? std::string(dtype_name(y.dtype())) : std::string("undefined")));
}

}  // namespace

Tensor mse_loss(Tensor input, Tensor target, Reduction reduction) {
  return detail::reduce_loss(square(difference("mse_loss", std::move(input), std::move(target), reduction)), reduction);
}

Tensor l1_loss(Tensor input, Tensor target, Reduction reduction) {
  return detail::reduce_loss(abs(difference("l1_loss", std::move(input), std::move(target), reduction)), reduction);
}

Tensor huber_loss(Tensor input, Tensor target, Reduction reduction, double delta) {
  KILN_CHECK(delta > 0.0, "huber_loss", "delta must be positive, got " + std::to_string(delta));
  Tensor d = difference("huber_loss", std::move(input), std::move(target), reduction);
  Tensor z = abs(d);
  Tensor quadratic = mul(square(std::move(d)), 0.5);
  Tensor linear = mul(sub(z, 0.5 * delta), delta);
  return detail::reduce_loss(where(lt(std::move(z), delta), std::move(quadratic), std::move(linear)), reduction);
}

Tensor smooth_l1_loss(Tensor input, Tensor target, Reduction reduction, double beta) {
  KILN_CHECK(beta >= 0.0, "smooth_l1_loss", "beta must not be negative, got " + std::to_string(beta));
  Tensor d = difference("smooth_l1_loss", std::move(input), std::move(target), reduction);
  if (beta == 0.0) return detail::reduce_loss(abs(std::move(d)), reduction);  // torch: the L1 loss
  Tensor z = abs(d);
  Tensor quadratic = mul(square(std::move(d)), 0.5 / beta);
  Tensor linear = sub(z, 0.5 * beta);
  return detail::reduce_loss(where(lt(std::move(z), beta), std::move(quadratic), std::move(linear)), reduction);
}

Tensor binary_cross_entropy(Tensor probs, Tensor target, Tensor weight, Reduction reduction) {
  const char* op = "binary_cross_entropy";
  detail::check_reduction(op, reduction);
  detail::check_same_shape(op, "input", probs, "target", target);
  check_broadcasts_to(op, "weight", weight, probs);
  // torch's CPU kernel: (t - 1) max(log1p(-p), -100) - t max(log(p), -100).
  Tensor log_not_p = clamp(log1p(neg(probs)), -100.0, std::nullopt);
  Tensor log_p = clamp(log(std::move(probs)), -100.0, std::nullopt);
  Tensor loss = sub(mul(sub(target, 1.0), std::move(log_not_p)), mul(target, std::move(log_p)));
  if (weight.defined()) loss = mul(std::move(loss), std::move(weight));
  return detail::reduce_loss(std::move(loss), reduction);
}

Tensor binary_cross_entropy_with_logits(Tensor logits, Tensor target, Tensor weight, Tensor pos_weight,
                                        Reduction reduction) {
  const char* op = "binary_cross_entropy_with_logits";
  detail::check_reduction(op, reduction);
  detail::check_same_shape(op, "input", logits, "target", target);
  check_broadcasts_to(op, "weight", weight, logits);
  check_broadcasts_to(op, "pos_weight", pos_weight, logits);
  // -t log(sigmoid(x)) - (1 - t) log(1 - sigmoid(x)) = (1 - t) x + softplus(-x), and softplus
  // never overflows; pos_weight scales the positive term: (1 + (pw - 1) t) softplus(-x).
  Tensor log_weight = pos_weight.defined() ? add(mul(sub(std::move(pos_weight), 1.0), target), 1.0) : Tensor{};
  Tensor soft = softplus(neg(logits));
  if (log_weight.defined()) soft = mul(std::move(soft), std::move(log_weight));
  Tensor loss = add(mul(sub(1.0, std::move(target)), std::move(logits)), std::move(soft));
  if (weight.defined()) loss = mul(std::move(loss), std::move(weight));
  return detail::reduce_loss(std::move(loss), reduction);
}

Tensor kl_div(Tensor input, Tensor target, Reduction reduction, bool log_target) {
  detail::check_same_shape("kl_div", "input", input, "target", target);
  const std::int64_t batch = input.rank() > 0 ? input.size(0) : 1;
  Tensor loss;
  if (log_target) {
    Tensor p = exp(target);
    loss = mul(std::move(p), sub(std::move(target), std::move(input)));
  } else {
    // xlogy(t, t) - t x: 0 where t == 0 (where t < 0, NaN, as in torch).
    Tensor zero = eq(target, 0.0);
    Tensor t_log_t = where(std::move(zero), 0.0, mul(target, log(target)));
    loss = sub(std::move(t_log_t), mul(std::move(target), std::move(input)));
  }
  if (reduction == Reduction::batchmean) return div(sum(std::move(loss)), static_cast<double>(batch));
  return detail::reduce_loss(std::move(loss), reduction);
}

Tensor cosine_embedding_loss(Tensor x1, Tensor x2, Tensor y, double margin, Reduction reduction) {
  const char* op = "cosine_embedding_loss";
  detail::check_reduction(op, reduction);
  detail::check_same_shape(op, "input1", x1, "input2", x2);
  check_label(op, y);
  KILN_CHECK(x1.rank() == 1 || x1.rank() == 2, op, "inputs must be [N, D] or [D], got " + x1.shape().str());
  Shape expected = x1.shape();
  expected.erase(x1.rank() - 1);
  KILN_CHECK(y.shape() == expected, op,
             "target " + y.shape().str() + " must be " + expected.str() + " for inputs " + x1.shape().str());
  // torch adds 1e-12 to each squared norm before the square root of their product.
  constexpr double kEpsilon = 1e-12;
  Tensor dot = sum(mul(x1, x2), {-1});
  Tensor norms = mul(add(sum(square(std::move(x1)), {-1}), kEpsilon), add(sum(square(std::move(x2)), {-1}), kEpsilon));
  Tensor cos = div(std::move(dot), sqrt(std::move(norms)));
  Tensor similar = where(eq(y, 1.0), sub(1.0, cos), 0.0);
  Tensor dissimilar = where(eq(std::move(y), -1.0), clamp(sub(std::move(cos), margin), 0.0, std::nullopt), 0.0);
  return detail::reduce_loss(add(std::move(similar), std::move(dissimilar)), reduction);
}

Tensor margin_ranking_loss(Tensor x1, Tensor x2, Tensor y, double margin, Reduction reduction) {
  const char* op = "margin_ranking_loss";
  detail::check_reduction(op, reduction);
  detail::check_same_shape(op, "input1", x1, "input2", x2);
  check_label(op, y);
  KILN_CHECK(y.shape() == x1.shape(), op,
             "target " + y.shape().str() + " must have the shape of the inputs " + x1.shape().str());
  Tensor loss = add(mul(neg(std::move(y)), sub(std::move(x1), std::move(x2))), margin);
  return detail::reduce_loss(clamp(std::move(loss), 0.0, std::nullopt), reduction);
}

}  // namespace kiln::nn
