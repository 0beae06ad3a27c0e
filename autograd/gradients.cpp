// Gradients: leaf entity -> gradient, with the few operations training code needs: read one,
// sum two (several batches, several threads), and take out the ones of a module.
#include <string>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"

namespace kiln {

namespace {
std::string describe_param(const Tensor& t) {
  if (!t.defined()) return "(undefined)";
  return std::string(dtype_name(t.dtype())) + t.shape().str() + " (entity " + std::to_string(t.id()) + ")";
}
}  // namespace

bool Gradients::contains(const Tensor& param) const { return param.defined() && grads_.count(param.id()) != 0; }

const Tensor& Gradients::get(const Tensor& param) const {
  KILN_CHECK(param.defined(), "Gradients::get", "the tensor is undefined");
  auto it = grads_.find(param.id());
  KILN_CHECK(it != grads_.end(), "Gradients::get",
             "the tensor " + describe_param(param) +
                 " took no part in the backward pass these gradients come from (it was not marked with "
                 "require_grad, no recorded op used it, or its gradient was taken out)");
  return it->second;
}

void Gradients::set(const Tensor& param, Tensor grad) {
  KILN_CHECK(param.defined() && grad.defined(), "Gradients::set", "the parameter and the gradient must be defined");
  KILN_CHECK(grad.shape() == param.shape() && is_floating(grad.dtype()), "Gradients::set",
             "the gradient of " + describe_param(param) + " must be a float tensor of its shape, got " +
                 grad.shape().str() + " " + dtype_name(grad.dtype()));
  grads_[param.id()] = std::move(grad);
}

void Gradients::accumulate(EntityId id, Tensor grad) {
  auto [it, inserted] = grads_.try_emplace(id, std::move(grad));
  if (!inserted) it->second = add(std::move(it->second), std::move(grad));
}

Gradients& Gradients::operator+=(const Gradients& other) {
  for (const auto& [id, g] : other.grads_) accumulate(id, g);
  return *this;
}

Gradients operator+(Gradients a, const Gradients& b) { return a += b; }

Gradients Gradients::take(const std::vector<Tensor>& params) {
  for (std::size_t i = 0; i < params.size(); ++i)
    KILN_CHECK(contains(params[i]), "Gradients::take",
               "parameter #" + std::to_string(i) + " " + describe_param(params[i]) +
                   " has no gradient here (it took no part in the backward pass, or was taken already)");
  Gradients out;
  for (const Tensor& p : params) {
    auto node = grads_.extract(p.id());
    if (!node.empty()) out.grads_.insert(std::move(node));  // a parameter listed twice moves once
  }
  return out;
}

}  // namespace kiln
