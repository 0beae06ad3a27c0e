// Adam and AdamW as PyTorch 1.13 computes them (torch/optim/adam.py, adamw.py, the
// single-tensor path):
//   m = b1 m + (1 - b1) g        v = b2 v + (1 - b2) g^2        (v_max = max(v_max, v))
//   p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Adam adds weight_decay * p to g; AdamW first shrinks p by (1 - lr * weight_decay). The
// bias corrections are scalars of the step: they change every step but not the fused kernel's
// structure, so it compiles once.
#include <bit>
#include <cmath>

#include "kiln/optim/optimizers.h"

namespace kiln::optim {

Adam::Adam(AdamOptions options) : Adam(options, false) {}

Adam::Adam(AdamOptions options, bool decoupled)
    : Optimizer(options.lr, options.weight_decay), o_(options), decoupled_(decoupled) {
  check_option(std::isfinite(o_.lr) && o_.lr >= 0, "lr must be >= 0, got " + std::to_string(o_.lr));
  check_option(o_.beta1 >= 0 && o_.beta1 < 1, "beta1 must be in [0, 1), got " + std::to_string(o_.beta1));
  check_option(o_.beta2 >= 0 && o_.beta2 < 1, "beta2 must be in [0, 1), got " + std::to_string(o_.beta2));
  check_option(o_.eps >= 0, "eps must be >= 0, got " + std::to_string(o_.eps));
  check_option(o_.weight_decay >= 0, "weight_decay must be >= 0, got " + std::to_string(o_.weight_decay));
}

// The two option types are instances of one template: the same fields in the same order, so
// every field, present and future, carries over bit for bit.
AdamW::AdamW(AdamWOptions options) : Adam(std::bit_cast<AdamOptions>(options), true) {}

std::vector<std::string> Adam::slot_names() const {
  if (o_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

// -lr / (1 - b1^t), sqrt(1 - b2^t), and AdamW's 1 - lr * weight_decay.
std::vector<double> Adam::step_numbers(const UpdateContext& ctx) const {
  const double t = static_cast<double>(ctx.step);
  std::vector<double> numbers{-(ctx.lr / (1 - std::pow(o_.beta1, t))), std::sqrt(1 - std::pow(o_.beta2, t))};
  if (decoupled_ && ctx.weight_decay != 0) numbers.push_back(1 - ctx.lr * ctx.weight_decay);
  return numbers;
}

Tensor Adam::update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad, std::vector<Tensor>& slots) const {
  Tensor g = grad;
  if (ctx.weight_decay != 0) {
    if (decoupled_) param = std::move(param) * ctx.number(2);
    else g = grad + param * ctx.weight_decay;
  }
  slots[0] = std::move(slots[0]) * o_.beta1 + g * (1 - o_.beta1);
  slots[1] = std::move(slots[1]) * o_.beta2 + g * g * (1 - o_.beta2);
  if (o_.amsgrad) slots[2] = maximum(std::move(slots[2]), slots[1]);
  Tensor denom = sqrt(o_.amsgrad ? slots[2] : slots[1]) / ctx.number(1) + o_.eps;
  Tensor step = slots[0] / std::move(denom) * ctx.number(0);
  return std::move(param) + std::move(step);
}

}  // namespace kiln::optim
