// Learning-rate schedulers: one number per step, computed from a base learning rate, with the
// semantics of PyTorch 1.13's torch.optim.lr_scheduler. The optimizer takes the learning rate
// explicitly, so a scheduler holds no optimizer and no model:
//
//   optim::CosineAnnealingLr schedule(/*base_lr=*/0.1, /*t_max=*/100);
//   for (...) {
//     model = optimizer.step(schedule.lr(), std::move(model), grads);
//     schedule.step();                     // ReduceLrOnPlateau: schedule.step(validation_loss)
//   }
//
// lr() is the learning rate of the current step (torch: param_groups[0]['lr'] before
// optimizer.step()); step() moves to the next one, per epoch or per batch as the caller decides.
// A scheduler is a value: copies are independent, clone() copies through the base class, and
// state()/load_state() save and resume its progress (the settings are the constructor's).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/optim/state.h"

namespace kiln::optim {

class LrScheduler {
 public:
  virtual ~LrScheduler() = default;

  // The learning rate for the current step.
  virtual double lr() const = 0;
  // The momentum (SGD's momentum, Adam's beta1) for the current step, for schedulers that cycle
  // it (OneCycleLr); nullopt for the others.
  virtual std::optional<double> momentum() const { return std::nullopt; }
  // The learning rate the schedule is defined from: torch's `initial_lr` (OneCycleLr's is
  // max_lr / div_factor). LinearWarmup ramps up to the base_lr() of the schedule it precedes.
  virtual double base_lr() const = 0;

  // Advances one step. ReduceLrOnPlateau needs a metric and rejects step(); every other
  // scheduler ignores a metric, so a training loop may call step(metric) on any scheduler.
  // A NaN metric is an error.
  void step();
  void step(double metric);
  // How many steps have been taken, with or without a metric (torch's last_epoch).
  std::int64_t steps() const { return steps_; }
  // Whether the schedule watches a metric (ReduceLrOnPlateau, or a warmup in front of one), so
  // that the loop must call step(metric).
  virtual bool needs_metric() const { return false; }

  // The progress as named numbers: a marker "kind.<name()>" = 1, "step", and what the schedule
  // keeps besides ("lr", "best", "num_bad", ...); "best" is +-inf before a plateau's first
  // metric. load_state restores it exactly; it rejects a state of another kind of scheduler,
  // missing or unknown names, and invalid values, and leaves the scheduler unchanged when it
  // throws.
  State state() const;
  void load_state(const State& state);

  virtual std::unique_ptr<LrScheduler> clone() const = 0;
  // "CosineAnnealingLr" and its settings ("base_lr=0.1, t_max=100, eta_min=0") for logs.
  virtual std::string name() const = 0;
  virtual std::string describe() const = 0;

 protected:
  LrScheduler() = default;
  LrScheduler(const LrScheduler&) = default;
  LrScheduler& operator=(const LrScheduler&) = default;

  // Moves from step steps() to steps() + 1; `metric` is nullopt for step().
  virtual void advance(std::optional<double> metric) = 0;
  // The numbers besides the marker and "step". Their names must not depend on the values.
  virtual void save(State& state) const {}
  // Reads what save() wrote; `state` already has exactly the names save() writes. Validates
  // everything before changing anything, so a throw leaves the scheduler as it was.
  virtual void restore(const State& state, std::int64_t steps) {}

 private:
  std::int64_t steps_ = 0;
};

// --- lr_schedule_basic.cpp ---------------------------------------------------------------------

// The same learning rate at every step.
class ConstantLr final : public LrScheduler {
 public:
  explicit ConstantLr(double base_lr);
  double lr() const override { return base_lr_; }
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "ConstantLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0;
};

// torch's ConstantLR: base_lr * factor for the first total_iters steps, then base_lr.
class ConstantFactorLr final : public LrScheduler {
 public:
  ConstantFactorLr(double base_lr, double factor = 1.0 / 3, std::int64_t total_iters = 5);
  double lr() const override;
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "ConstantFactorLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0, factor_ = 0;
  std::int64_t total_iters_ = 0;
};

// base_lr * gamma^(step / step_size).
class StepLr final : public LrScheduler {
 public:
  StepLr(double base_lr, std::int64_t step_size, double gamma = 0.1);
  double lr() const override;
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "StepLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0, gamma_ = 0;
  std::int64_t step_size_ = 0;
};

// base_lr * gamma^(milestones reached). Milestones are non-decreasing and non-negative; one
// listed twice counts twice, as in torch (which keeps them in a Counter).
class MultiStepLr final : public LrScheduler {
 public:
  MultiStepLr(double base_lr, std::vector<std::int64_t> milestones, double gamma = 0.1);
  double lr() const override;
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "MultiStepLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0, gamma_ = 0;
  std::vector<std::int64_t> milestones_;
};

// base_lr * gamma^step.
class ExponentialLr final : public LrScheduler {
 public:
  ExponentialLr(double base_lr, double gamma);
  double lr() const override;
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "ExponentialLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0, gamma_ = 0;
};

// The factor goes linearly from start_factor to end_factor over total_iters steps, then stays.
class LinearLr final : public LrScheduler {
 public:
  LinearLr(double base_lr, double start_factor = 1.0 / 3, double end_factor = 1.0, std::int64_t total_iters = 5);
  double lr() const override;
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "LinearLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0, start_factor_ = 0, end_factor_ = 0;
  std::int64_t total_iters_ = 0;
};

// --- lr_schedule_cosine.cpp --------------------------------------------------------------------

// Half a cosine from base_lr down to eta_min over t_max steps; past t_max it rises again
// (period 2 t_max), as torch's does. Computed by torch's recursive ("chainable") form, so its
// values are the ones torch produces when stepped, not its closed form's.
class CosineAnnealingLr final : public LrScheduler {
 public:
  CosineAnnealingLr(double base_lr, std::int64_t t_max, double eta_min = 0.0);
  double lr() const override { return lr_; }
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "CosineAnnealingLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override;
  void save(State& state) const override;
  void restore(const State& state, std::int64_t steps) override;
  double base_lr_ = 0, eta_min_ = 0, lr_ = 0;
  std::int64_t t_max_ = 0;
};

// SGDR: cosine from base_lr to eta_min over a cycle of t_0 steps, then restart; each cycle is
// t_mult times longer than the one before.
class CosineAnnealingWarmRestarts final : public LrScheduler {
 public:
  CosineAnnealingWarmRestarts(double base_lr, std::int64_t t_0, std::int64_t t_mult = 1, double eta_min = 0.0);
  double lr() const override;
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "CosineAnnealingWarmRestarts"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0, eta_min_ = 0;
  std::int64_t t_0_ = 0, t_mult_ = 0;
};

// --- lr_schedule_onecycle.cpp ------------------------------------------------------------------

enum class AnnealStrategy { cos, linear };

struct OneCycleOptions {
  double pct_start = 0.3;  // share of the steps spent rising to max_lr
  AnnealStrategy anneal_strategy = AnnealStrategy::cos;
  bool cycle_momentum = true;  // momentum() goes max -> base -> max while the lr rises and falls
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;       // the first lr is max_lr / div_factor
  double final_div_factor = 1e4;  // the last is that / final_div_factor
  bool three_phase = false;       // rise, fall back to the first lr, then anneal to the last
};

// torch's OneCycleLR. It sets its own base (max_lr / div_factor) and may be stepped total_steps
// times; one step more is an error, as in torch.
class OneCycleLr final : public LrScheduler {
 public:
  OneCycleLr(double max_lr, std::int64_t total_steps, OneCycleOptions options = {});
  double lr() const override;
  std::optional<double> momentum() const override;
  double base_lr() const override { return initial_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "OneCycleLr"; }
  std::string describe() const override;

 private:
  struct Phase {
    double end_step = 0;
    double start_lr = 0, end_lr = 0;
    double start_momentum = 0, end_momentum = 0;
  };
  struct Point {
    double lr = 0, momentum = 0;
  };
  Point at(std::int64_t step) const;
  void advance(std::optional<double>) override;
  void restore(const State& state, std::int64_t steps) override;

  double max_lr_ = 0, initial_lr_ = 0;
  std::int64_t total_steps_ = 0;
  OneCycleOptions options_;
  std::vector<Phase> phases_;
};

// --- lr_schedule_plateau.cpp -------------------------------------------------------------------

enum class PlateauMode { min, max };  // whether a smaller or a larger metric is better
enum class ThresholdMode { rel, abs };

struct PlateauOptions {
  PlateauMode mode = PlateauMode::min;
  double factor = 0.1;         // lr *= factor on a plateau, 0 <= factor < 1
  std::int64_t patience = 10;  // steps without improvement tolerated before reducing
  double threshold = 1e-4;     // how much better counts as better (relative or absolute)
  ThresholdMode threshold_mode = ThresholdMode::rel;
  std::int64_t cooldown = 0;  // steps after a reduction during which bad steps are not counted
  double min_lr = 0.0;
  double eps = 1e-8;  // a reduction smaller than eps is skipped
};

// torch's ReduceLROnPlateau: advanced by step(metric) only.
class ReduceLrOnPlateau final : public LrScheduler {
 public:
  explicit ReduceLrOnPlateau(double base_lr, PlateauOptions options = {});
  double lr() const override { return lr_; }
  double base_lr() const override { return base_lr_; }
  bool needs_metric() const override { return true; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "ReduceLrOnPlateau"; }
  std::string describe() const override;

 private:
  bool is_better(double metric) const;
  void advance(std::optional<double> metric) override;
  void save(State& state) const override;
  void restore(const State& state, std::int64_t steps) override;

  double base_lr_ = 0;
  PlateauOptions options_;
  double lr_ = 0;
  double best_ = 0;  // +inf (min) or -inf (max) until the first metric
  std::int64_t num_bad_ = 0, cooldown_counter_ = 0;
};

// --- lr_schedule_warmup.cpp --------------------------------------------------------------------

// Linear warmup, then another schedule, which starts its own step 0 when the warmup ends:
// step s < warmup_steps gives base * (start_factor + (1 - start_factor) * s / warmup_steps), with
// base = then.base_lr(). In torch: SequentialLR([LinearLR(start_factor, 1.0, warmup_steps), then],
// milestones=[warmup_steps]). With a ReduceLrOnPlateau after it, metrics passed during the
// warmup are ignored (and step() without one is accepted there).
class LinearWarmup final : public LrScheduler {
 public:
  LinearWarmup(const LrScheduler& then, std::int64_t warmup_steps, double start_factor);
  LinearWarmup(const LinearWarmup& other);
  LinearWarmup& operator=(const LinearWarmup& other);
  double lr() const override;
  std::optional<double> momentum() const override { return then_->momentum(); }
  double base_lr() const override { return then_->base_lr(); }
  bool needs_metric() const override { return then_->needs_metric(); }
  // The schedule that follows the warmup (at step max(0, steps() - warmup_steps)).
  const LrScheduler& then() const { return *then_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "LinearWarmup"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double> metric) override;
  void save(State& state) const override;
  void restore(const State& state, std::int64_t steps) override;

  std::unique_ptr<LrScheduler> then_;
  std::int64_t warmup_steps_ = 0;
  double start_factor_ = 0;
};

// "Attention is all you need": base_lr * d_model^-0.5 * min(n^-0.5, n * warmup_steps^-1.5) with
// n = steps() + 1, so the first optimizer step is step 1 and the peak is at n = warmup_steps.
// In torch: LambdaLR(lambda e: d_model**-0.5 * min((e+1)**-0.5, (e+1) * warmup_steps**-1.5)).
// The Annotated Transformer's `factor` is base_lr here.
class NoamLr final : public LrScheduler {
 public:
  NoamLr(double base_lr, std::int64_t d_model, std::int64_t warmup_steps);
  double lr() const override;
  double base_lr() const override { return base_lr_; }
  std::unique_ptr<LrScheduler> clone() const override;
  std::string name() const override { return "NoamLr"; }
  std::string describe() const override;

 private:
  void advance(std::optional<double>) override {}
  double base_lr_ = 0;
  std::int64_t d_model_ = 0, warmup_steps_ = 0;
};

}  // namespace kiln::optim
