// Activations and dropout as compositions of kiln's elementwise ops (so they fuse and
// differentiate like any op). Where a branch is chosen with `where`, the gradient at the kink
// follows torch: the side torch's own backward uses.
#include <cmath>
#include <string>

#include "kiln/nn/functional.h"
#include "kiln/nn/functional_detail.h"

namespace kiln::nn {

Tensor leaky_relu(Tensor x, double negative_slope) {
  detail::check_float("leaky_relu", "input", x);
  Tensor positive = gt(x, 0.0);
  Tensor scaled = mul(x, negative_slope);
  return where(std::move(positive), std::move(x), std::move(scaled));
}

Tensor elu(Tensor x, double alpha) {
  detail::check_float("elu", "input", x);
  Tensor positive = gt(x, 0.0);
  // expm1 sees min(x, 0): a large positive x would overflow exp, and the infinite derivative of
  // the discarded branch times where's zero gradient would make the gradient NaN.
  Tensor negative_part = mul(expm1(clamp(x, std::nullopt, 0.0)), alpha);
  return where(std::move(positive), std::move(x), std::move(negative_part));
}

Tensor prelu(Tensor x, Tensor weight) {
  detail::check_float("prelu", "input", x);
  detail::check_float("prelu", "weight", weight);
  KILN_CHECK(weight.rank() <= 1, "prelu", "weight must have 1 element or be [C], got " + weight.shape().str());
  Tensor slope;
  if (weight.numel() == 1) {
    slope = reshape(std::move(weight), x.rank() == 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{1});
  } else {
    KILN_CHECK(x.rank() >= 2 && weight.size(0) == x.size(1), "prelu",
               "weight " + weight.shape().str() + " must have 1 element or one per channel (dim 1) of input " +
                   x.shape().str());
    slope = detail::channel_view(std::move(weight), x.rank());
  }
  Tensor positive = gt(x, 0.0);
  Tensor scaled = mul(x, std::move(slope));
  return where(std::move(positive), std::move(x), std::move(scaled));
}

Tensor gelu(Tensor x, bool tanh_approximation) {
  detail::check_float("gelu", "input", x);
  if (!tanh_approximation) return kiln::gelu(std::move(x));
  // torch's approximate='tanh': 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
  const double k_beta = std::sqrt(2.0 / M_PI), k_kappa = 0.044715;
  Tensor inner = mul(add(x, mul(mul(square(x), x), k_kappa)), k_beta);
  return mul(mul(x, 0.5), add(tanh(std::move(inner)), 1.0));
}

Tensor mish(Tensor x) {
  detail::check_float("mish", "input", x);
  Tensor t = tanh(softplus(x));
  return mul(std::move(x), std::move(t));
}

Tensor dropout(Tensor x, double p, bool training, Generator& gen) {
  detail::check_float("dropout", "input", x);
  KILN_CHECK(p >= 0.0 && p <= 1.0, "dropout", "probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(std::move(x), 0.0);
  Tensor keep = bernoulli(x.shape(), 1.0 - p, gen, TensorOptions{x.dtype(), x.device()});
  return mul(std::move(x), mul(std::move(keep), 1.0 / (1.0 - p)));
}

}  // namespace kiln::nn
