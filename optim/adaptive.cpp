// RMSprop, Adagrad and Adadelta as PyTorch 1.13 computes them (torch/optim/rmsprop.py,
// adagrad.py, adadelta.py, the single-tensor paths); weight decay joins the gradient (L2).
#include <cmath>

#include "kiln/optim/optimizers.h"

namespace kiln::optim {

namespace {
Tensor with_decay(const Tensor& grad, const Tensor& param, double weight_decay) {
  return weight_decay != 0 ? grad + param * weight_decay : grad;
}
}  // namespace

Rmsprop::Rmsprop(RmspropOptions options) : Optimizer(options.lr, options.weight_decay), o_(options) {
  check_option(std::isfinite(o_.lr) && o_.lr >= 0, "lr must be >= 0, got " + std::to_string(o_.lr));
  check_option(o_.alpha >= 0, "alpha must be >= 0, got " + std::to_string(o_.alpha));
  check_option(o_.eps >= 0, "eps must be >= 0, got " + std::to_string(o_.eps));
  check_option(o_.momentum >= 0, "momentum must be >= 0, got " + std::to_string(o_.momentum));
  check_option(o_.weight_decay >= 0, "weight_decay must be >= 0, got " + std::to_string(o_.weight_decay));
}

std::vector<std::string> Rmsprop::slot_names() const {
  std::vector<std::string> names{"square_avg"};
  if (o_.momentum > 0) names.push_back("momentum_buffer");
  if (o_.centered) names.push_back("grad_avg");
  return names;
}

// square_avg = a sq + (1 - a) g^2; centered: avg = sqrt(sq - grad_avg^2), else sqrt(sq); then
// p -= lr g / (avg + eps), or through a momentum buffer b = m b + g / (avg + eps).
std::vector<double> Rmsprop::step_numbers(const UpdateContext& ctx) const { return {-ctx.lr}; }

Tensor Rmsprop::update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad, std::vector<Tensor>& slots) const {
  const Tensor g = with_decay(grad, param, ctx.weight_decay);
  slots[0] = std::move(slots[0]) * o_.alpha + g * g * (1 - o_.alpha);
  Tensor avg;
  if (o_.centered) {
    Tensor& grad_avg = slots.back();
    grad_avg = std::move(grad_avg) * o_.alpha + g * (1 - o_.alpha);
    avg = sqrt(slots[0] - grad_avg * grad_avg) + o_.eps;
  } else {
    avg = sqrt(slots[0]) + o_.eps;
  }
  if (o_.momentum > 0) {
    slots[1] = std::move(slots[1]) * o_.momentum + g / std::move(avg);
    return std::move(param) + slots[1] * ctx.number(0);
  }
  Tensor step = g / std::move(avg) * ctx.number(0);
  return std::move(param) + std::move(step);
}

Adagrad::Adagrad(AdagradOptions options) : Optimizer(options.lr, options.weight_decay), o_(options) {
  check_option(std::isfinite(o_.lr) && o_.lr >= 0, "lr must be >= 0, got " + std::to_string(o_.lr));
  check_option(o_.lr_decay >= 0, "lr_decay must be >= 0, got " + std::to_string(o_.lr_decay));
  check_option(o_.initial_accumulator_value >= 0,
               "initial_accumulator_value must be >= 0, got " + std::to_string(o_.initial_accumulator_value));
  check_option(o_.eps >= 0, "eps must be >= 0, got " + std::to_string(o_.eps));
  check_option(o_.weight_decay >= 0, "weight_decay must be >= 0, got " + std::to_string(o_.weight_decay));
}

std::vector<std::string> Adagrad::slot_names() const { return {"sum"}; }

std::vector<Tensor> Adagrad::initial_slots(const Tensor& param) const {
  return {full_like(param, o_.initial_accumulator_value)};
}

// -lr / (1 + (t - 1) lr_decay)
std::vector<double> Adagrad::step_numbers(const UpdateContext& ctx) const {
  return {-(ctx.lr / (1 + static_cast<double>(ctx.step - 1) * o_.lr_decay))};
}

// sum += g^2; p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps).
Tensor Adagrad::update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad, std::vector<Tensor>& slots) const {
  const Tensor g = with_decay(grad, param, ctx.weight_decay);
  slots[0] = std::move(slots[0]) + g * g;
  Tensor step = g / (sqrt(slots[0]) + o_.eps) * ctx.number(0);
  return std::move(param) + std::move(step);
}

Adadelta::Adadelta(AdadeltaOptions options) : Optimizer(options.lr, options.weight_decay), o_(options) {
  check_option(std::isfinite(o_.lr) && o_.lr >= 0, "lr must be >= 0, got " + std::to_string(o_.lr));
  check_option(o_.rho >= 0 && o_.rho <= 1, "rho must be in [0, 1], got " + std::to_string(o_.rho));
  check_option(o_.eps >= 0, "eps must be >= 0, got " + std::to_string(o_.eps));
  check_option(o_.weight_decay >= 0, "weight_decay must be >= 0, got " + std::to_string(o_.weight_decay));
}

std::vector<std::string> Adadelta::slot_names() const { return {"square_avg", "acc_delta"}; }

// sq = rho sq + (1 - rho) g^2; delta = sqrt(acc + eps) / sqrt(sq + eps) * g;
// acc = rho acc + (1 - rho) delta^2; p -= lr delta.
std::vector<double> Adadelta::step_numbers(const UpdateContext& ctx) const { return {-ctx.lr}; }

Tensor Adadelta::update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad, std::vector<Tensor>& slots) const {
  const Tensor g = with_decay(grad, param, ctx.weight_decay);
  slots[0] = std::move(slots[0]) * o_.rho + g * g * (1 - o_.rho);
  const Tensor delta = sqrt(slots[1] + o_.eps) / sqrt(slots[0] + o_.eps) * g;
  slots[1] = std::move(slots[1]) * o_.rho + delta * delta * (1 - o_.rho);
  return std::move(param) + delta * ctx.number(0);
}

}  // namespace kiln::optim
