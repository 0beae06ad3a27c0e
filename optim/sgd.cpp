// SGD as PyTorch 1.13 computes it (torch/optim/sgd.py, _single_tensor_sgd): L2 weight decay
// joins the gradient; the momentum buffer starts as the first gradient, then
// buf = momentum * buf + (1 - dampening) * g; Nesterov steps along g + momentum * buf.
#include <cmath>

#include "kiln/optim/optimizers.h"

namespace kiln::optim {

Sgd::Sgd(SgdOptions options) : Optimizer(options.lr, options.weight_decay), o_(options) {
  check_option(std::isfinite(o_.lr) && o_.lr >= 0, "lr must be >= 0, got " + std::to_string(o_.lr));
  check_option(o_.momentum >= 0, "momentum must be >= 0, got " + std::to_string(o_.momentum));
  check_option(o_.weight_decay >= 0, "weight_decay must be >= 0, got " + std::to_string(o_.weight_decay));
  check_option(!o_.nesterov || (o_.momentum > 0 && o_.dampening == 0),
               "Nesterov momentum needs momentum > 0 and dampening 0, got momentum " + std::to_string(o_.momentum) +
                   " and dampening " + std::to_string(o_.dampening));
}

std::vector<std::string> Sgd::slot_names() const {
  if (o_.momentum == 0) return {};
  return {"momentum_buffer"};
}

// The buffer is made from the first gradient, not zeros.
std::vector<Tensor> Sgd::initial_slots(const Tensor&) const { return std::vector<Tensor>(slot_names().size()); }

std::vector<double> Sgd::step_numbers(const UpdateContext& ctx) const { return {-ctx.lr}; }

Tensor Sgd::update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad, std::vector<Tensor>& slots) const {
  Tensor d = ctx.weight_decay != 0 ? grad + param * ctx.weight_decay : grad;
  if (o_.momentum != 0) {
    Tensor& buf = slots[0];
    buf = buf.defined() ? std::move(buf) * o_.momentum + d * (1 - o_.dampening) : d;
    d = o_.nesterov ? d + buf * o_.momentum : buf;
  }
  return std::move(param) + std::move(d) * ctx.number(0);
}

}  // namespace kiln::optim
