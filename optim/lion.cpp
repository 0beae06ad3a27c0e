// Lion (Chen et al. 2023, Algorithm 2): p = p (1 - lr wd) - lr sign(b1 m + (1 - b1) g);
// m = b2 m + (1 - b2) g. One moment, and every coordinate moves by exactly lr.
#include <cmath>

#include "kiln/optim/optimizers.h"

namespace kiln::optim {

Lion::Lion(LionOptions options) : Optimizer(options.lr, options.weight_decay), o_(options) {
  check_option(std::isfinite(o_.lr) && o_.lr >= 0, "lr must be >= 0, got " + std::to_string(o_.lr));
  check_option(o_.beta1 >= 0 && o_.beta1 <= 1, "beta1 must be in [0, 1], got " + std::to_string(o_.beta1));
  check_option(o_.beta2 >= 0 && o_.beta2 <= 1, "beta2 must be in [0, 1], got " + std::to_string(o_.beta2));
  check_option(o_.weight_decay >= 0, "weight_decay must be >= 0, got " + std::to_string(o_.weight_decay));
}

std::vector<std::string> Lion::slot_names() const { return {"exp_avg"}; }

// -lr, and 1 - lr * weight_decay with weight decay.
std::vector<double> Lion::step_numbers(const UpdateContext& ctx) const {
  std::vector<double> numbers{-ctx.lr};
  if (ctx.weight_decay != 0) numbers.push_back(1 - ctx.lr * ctx.weight_decay);
  return numbers;
}

Tensor Lion::update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad, std::vector<Tensor>& slots) const {
  if (ctx.weight_decay != 0) param = std::move(param) * ctx.number(1);
  Tensor step = sign(slots[0] * o_.beta1 + grad * (1 - o_.beta1)) * ctx.number(0);
  slots[0] = std::move(slots[0]) * o_.beta2 + grad * (1 - o_.beta2);
  return std::move(param) + std::move(step);
}

}  // namespace kiln::optim
