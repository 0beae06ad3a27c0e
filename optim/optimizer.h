// The optimizer interface: a step takes a module and a Gradients value and yields the updated
// module (Burn's `model = optim.step(lr, model, grads)`), so no tensor a running forward pass
// reads is ever changed under it. Each parameter's update is a handful of elementwise ops that
// the fusion planner turns into one kernel; when the caller hands the module over
// (std::move), that kernel writes the new value and the moments into their old buffers.
//
//   optim::Adam opt({.lr = 1e-3});
//   for (...) {
//     Gradients grads = backward(loss_of(model, batch));
//     model = opt.step(scheduler.lr(), std::move(model), grads);
//   }
//
// Parameter groups give some parameters their own learning-rate scale or weight decay (no
// decay on biases and norms is the usual case). Frozen parameters and parameters without a
// gradient in this step are left as they are (and their moments too), as PyTorch does.
// An optimizer is not thread-safe: one training loop drives it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/optim/state.h"
#include "kiln/optim/step_number.h"

namespace kiln::optim {

// Which parameters a group takes: (state_dict path, value) -> bool.
using ParamSelector = std::function<bool(const std::string& path, const Tensor& value)>;

// Biases and normalization weights: parameters of rank 0 or 1 (a bias, a LayerNorm's weight).
bool is_bias_or_norm(const std::string& path, const Tensor& value);

struct ParamGroup {
  ParamSelector selects;
  double lr_scale = 1.0;                // this group's learning rate = the step's lr * lr_scale
  std::optional<double> weight_decay{};  // the optimizer's own when empty
};

// What one parameter's update sees.
struct UpdateContext {
  double lr = 0.0;
  double weight_decay = 0.0;
  std::int64_t step = 0;  // this parameter's updates so far, this one included (1 on the first)
  const std::string* path = nullptr;
  // Optimizer::step_numbers of this context, as the update's ops take them (optim/step_number.h).
  const std::vector<StepNumber>* numbers = nullptr;
  const StepNumber& number(std::size_t k) const { return (*numbers)[k]; }
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // The module with every trainable parameter that has a gradient updated. Hand the module
  // over (std::move) to let the update reuse the old buffers.
  // Everything is checked before the module is taken: after an error the caller's module is
  // as it was, even when it was passed with std::move.
  template <class M> std::decay_t<M> step(double lr, M&& module, const Gradients& grads) {
    check_step(lr, module, grads);
    std::decay_t<M> next(std::forward<M>(module));
    apply_step(lr, next, grads);
    return next;
  }
  template <class M> std::decay_t<M> step(M&& module, const Gradients& grads) {
    return step(lr(), std::forward<M>(module), grads);
  }

  // The same, on the module in place.
  void update(double lr, nn::Module& module, const Gradients& grads) {
    check_step(lr, module, grads);
    apply_step(lr, module, grads);
  }

  // The learning rate of the options, used when a step names none.
  double lr() const { return lr_; }
  // The weight decay parameters get when no group names one.
  double weight_decay() const { return weight_decay_; }

  // Groups are matched in the order they were added; the first that selects a parameter wins.
  void add_group(ParamGroup group);

  // Moments and step counts: tensors named "<slot>.<parameter path>", numbers "step.<path>"
  // and "steps" (the optimizer's own count of step calls).
  State state() const;
  // Takes a state saved by the same kind of optimizer; its tensors are checked against the
  // parameters at the next step (shape, device).
  void load_state(const State& state);
  std::int64_t steps() const { return steps_; }

  virtual const char* name() const = 0;

  // Whether its steps can be recorded (optim/recorded_step.h): its update takes every value that
  // changes from step to step from ctx.number(k), none from ctx.lr or ctx.step. kiln's own
  // optimizers can; one of a user's says so by overriding this and step_numbers.
  virtual bool recordable() const { return false; }

 protected:
  Optimizer(double lr, double weight_decay);

  // The names of the per-parameter tensors the update keeps (Adam: exp_avg, exp_avg_sq).
  virtual std::vector<std::string> slot_names() const = 0;
  // Makes the slots on the parameter's first update; undefined slots are fine (SGD's momentum
  // buffer starts as the first gradient).
  virtual std::vector<Tensor> initial_slots(const Tensor& param) const;
  // One parameter: consumes `param` and the slots (move them into the ops that read them last)
  // and returns the new value, leaving the new slots in `slots`.
  virtual Tensor update_parameter(const UpdateContext& ctx, Tensor param, const Tensor& grad,
                                  std::vector<Tensor>& slots) const = 0;
  // The numbers of a parameter's update that change from step to step, computed on the host
  // from ctx.lr, ctx.step and ctx.weight_decay at every step, eager or recorded; the update
  // reads them as ctx.number(k) (SGD: -lr; Adam: -lr / (1 - beta1^t) and sqrt(1 - beta2^t)).
  virtual std::vector<double> step_numbers(const UpdateContext& ctx) const { return {}; }

  // "Adam: beta1 must be in [0, 1), got 1.5" style checks for the options.
  void check_option(bool ok, const std::string& what) const;

 private:
  friend class RecordedStep;  // replays steps: reads and replaces the moments and counts below

  struct ParamState {
    std::int64_t step = 0;
    std::vector<Tensor> slots;
  };
  // A recorded step's numbers of one parameter's update: 0-d tensors that each replay fills.
  using RecordedNumbers = std::function<std::vector<StepNumber>(const std::string& path, const UpdateContext& ctx)>;

  // Learning rate, gradient shapes and devices, the saved moments against the parameters.
  void check_step(double lr, const nn::Module& module, const Gradients& grads) const;
  // `recorded`: where the numbers come from while a step is recorded (else step_numbers' doubles).
  void apply_step(double lr, nn::Module& module, const Gradients& grads, const RecordedNumbers* recorded = nullptr);
  const ParamGroup* group_of(const std::string& path, const Tensor& value) const;
  // The context of `path`'s update number `step` at learning rate `lr`.
  UpdateContext context_of(double lr, const std::string& path, const Tensor& value, std::int64_t step) const;

  double lr_;
  double weight_decay_;
  std::vector<ParamGroup> groups_;
  std::map<std::string, ParamState> params_;  // by state_dict path
  std::int64_t steps_ = 0;
};

}  // namespace kiln::optim
