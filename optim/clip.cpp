#include "kiln/optim/clip.h"

#include <cmath>

#include "kiln/autograd/autograd.h"
#include "kiln/base/error.h"

namespace kiln::optim {

namespace {
// The trainable parameters that have a gradient here.
std::vector<Tensor> with_gradients(const Gradients& grads, const nn::Module& module) {
  std::vector<Tensor> out;
  for (Tensor& p : module.parameters(/*trainable_only=*/true))
    if (grads.contains(p)) out.push_back(std::move(p));
  return out;
}
}  // namespace

Tensor clip_grad_norm(Gradients& grads, const nn::Module& module, double max_norm, double norm_type) {
  KILN_CHECK(std::isfinite(max_norm) && max_norm >= 0, "clip_grad_norm", "max_norm must be finite and >= 0, got " + std::to_string(max_norm));
  KILN_CHECK(norm_type > 0, "clip_grad_norm", "norm_type must be > 0 (or infinity), got " + std::to_string(norm_type));
  const NoGradGuard no_grad;
  const std::vector<Tensor> params = with_gradients(grads, module);
  if (params.empty()) return scalar(0.0);
  const bool inf = std::isinf(norm_type);
  // Per parameter: max |g|, or the sum of |g|^p; then across parameters.
  Tensor total;
  for (const Tensor& p : params) {
    const Tensor& g = grads.get(p);
    Tensor part = inf ? max(abs(g)) : norm_type == 2 ? sum(square(g)) : norm_type == 1 ? sum(abs(g)) : sum(pow(abs(g), norm_type));
    if (part.device() != params.front().device()) part = to(std::move(part), params.front().device());
    total = !total.defined() ? std::move(part) : inf ? maximum(std::move(total), std::move(part)) : std::move(total) + std::move(part);
  }
  if (!inf) total = norm_type == 2 ? sqrt(std::move(total)) : norm_type == 1 ? std::move(total) : pow(std::move(total), 1.0 / norm_type);
  const Tensor coef = clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
  for (const Tensor& p : params) {
    const Tensor& g = grads.get(p);
    const Tensor c = coef.device() == g.device() ? coef : to(coef, g.device());
    grads.set(p, g * c);
  }
  return total;
}

void clip_grad_value(Gradients& grads, const nn::Module& module, double clip_value) {
  KILN_CHECK(std::isfinite(clip_value) && clip_value >= 0, "clip_grad_value",
             "clip_value must be finite and >= 0, got " + std::to_string(clip_value));
  const NoGradGuard no_grad;
  for (const Tensor& p : with_gradients(grads, module)) grads.set(p, clamp(grads.get(p), -clip_value, clip_value));
}

}  // namespace kiln::optim
