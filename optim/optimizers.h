// The optimizers, with PyTorch's options, defaults, state names and update formulas (1.13),
// so a model trained in both moves the same way from the same start. Lion, which PyTorch lacks,
// follows its paper (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms").
// Options are plain structs: `optim::Adam opt({.lr = 3e-4, .weight_decay = 1e-4});`.
#pragma once
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct SgdOptions {
  double lr = 1e-2;
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening 0
  double weight_decay = 0.0;
};

// State: momentum_buffer (with momentum), the first gradient on the first step.
class Sgd : public Optimizer {
 public:
  explicit Sgd(SgdOptions options = {});
  bool recordable() const override { return true; }
  const char* name() const override { return "SGD"; }
  const SgdOptions& options() const { return o_; }

 protected:
  std::vector<std::string> slot_names() const override;
  std::vector<Tensor> initial_slots(const Tensor& param) const override;
  Tensor update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad,
                          std::vector<Tensor>& slots) const override;
  std::vector<double> step_numbers(const UpdateContext& ctx) const override;

 private:
  SgdOptions o_;
};

// Adam's and AdamW's options: one list of fields, whose only difference is weight decay's
// default (0 for Adam, 1e-2 for AdamW, as PyTorch's). A template over that default rather than
// a base struct: designated initializers cannot name a base's fields, and users write
// `optim::AdamW({.lr = 1e-3, .weight_decay = 0.01})`.
template <double default_weight_decay> struct AdamFamilyOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = default_weight_decay;  // Adam: added to the gradient (L2); AdamW: decoupled
  bool amsgrad = false;
};
using AdamOptions = AdamFamilyOptions<0.0>;
using AdamWOptions = AdamFamilyOptions<1e-2>;

// State: exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad.
class Adam : public Optimizer {
 public:
  using Options = AdamOptions;
  explicit Adam(AdamOptions options = {});
  bool recordable() const override { return true; }
  const char* name() const override { return decoupled_ ? "AdamW" : "Adam"; }
  const AdamOptions& options() const { return o_; }

 protected:
  Adam(AdamOptions options, bool decoupled);
  std::vector<std::string> slot_names() const override;
  Tensor update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad,
                          std::vector<Tensor>& slots) const override;
  std::vector<double> step_numbers(const UpdateContext& ctx) const override;

 private:
  AdamOptions o_;
  bool decoupled_;
};

// Adam with decoupled weight decay (Loshchilov and Hutter): the value shrinks by
// lr * weight_decay before the Adam step, instead of the decay joining the gradient.
class AdamW : public Adam {
 public:
  using Options = AdamWOptions;
  explicit AdamW(AdamWOptions options = {});
};

struct RmspropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
};

// State: square_avg; momentum_buffer with momentum; grad_avg when centered.
class Rmsprop : public Optimizer {
 public:
  explicit Rmsprop(RmspropOptions options = {});
  bool recordable() const override { return true; }
  const char* name() const override { return "RMSprop"; }

 protected:
  std::vector<std::string> slot_names() const override;
  Tensor update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad,
                          std::vector<Tensor>& slots) const override;
  std::vector<double> step_numbers(const UpdateContext& ctx) const override;

 private:
  RmspropOptions o_;
};

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;
};

// State: sum (of squared gradients).
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});
  bool recordable() const override { return true; }
  const char* name() const override { return "Adagrad"; }

 protected:
  std::vector<std::string> slot_names() const override;
  std::vector<Tensor> initial_slots(const Tensor& param) const override;
  Tensor update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad,
                          std::vector<Tensor>& slots) const override;
  std::vector<double> step_numbers(const UpdateContext& ctx) const override;

 private:
  AdagradOptions o_;
};

struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0.0;
};

// State: square_avg, acc_delta.
class Adadelta : public Optimizer {
 public:
  explicit Adadelta(AdadeltaOptions options = {});
  bool recordable() const override { return true; }
  const char* name() const override { return "Adadelta"; }

 protected:
  std::vector<std::string> slot_names() const override;
  Tensor update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad,
                          std::vector<Tensor>& slots) const override;
  std::vector<double> step_numbers(const UpdateContext& ctx) const override;

 private:
  AdadeltaOptions o_;
};

struct LionOptions {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double weight_decay = 0.0;  // decoupled, as AdamW's
};

// State: exp_avg. The step is the sign of an interpolation of momentum and gradient.
class Lion : public Optimizer {
 public:
  explicit Lion(LionOptions options = {});
  bool recordable() const override { return true; }
  const char* name() const override { return "Lion"; }

 protected:
  std::vector<std::string> slot_names() const override;
  Tensor update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad,
                          std::vector<Tensor>& slots) const override;
  std::vector<double> step_numbers(const UpdateContext& ctx) const override;

 private:
  LionOptions o_;
};

}  // namespace kiln::optim
