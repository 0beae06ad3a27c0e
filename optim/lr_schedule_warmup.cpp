// Warmups: a linear warmup in front of any other schedule (LinearWarmup), and the Transformer's
// inverse-square-root schedule with its built-in warmup (NoamLr).
#include <algorithm>
#include <cmath>

#include "kiln/base/error.h"
#include "kiln/optim/lr_schedule_checks.h"
#include "kiln/optim/lr_scheduler.h"

namespace kiln::optim {

using detail::number_text;

namespace {
// The wrapped schedule's state sits under this prefix in the warmup's state.
const std::string kThen = "then.";
}  // namespace

// LinearWarmup ----------------------------------------------------------------------------------

LinearWarmup::LinearWarmup(const LrScheduler& then, std::int64_t warmup_steps, double start_factor)
    : then_(then.clone()), warmup_steps_(warmup_steps), start_factor_(start_factor) {
  detail::check_count(name(), "warmup_steps", warmup_steps, 1);
  detail::check_in_range(name(), "start_factor", start_factor, 0.0, 1.0);
  // The schedule after the warmup starts at its step 0, as SequentialLR's does at its milestone.
  KILN_CHECK(then.steps() == 0, name(),
             "the schedule after the warmup must not have been stepped yet; " + then.name() + " is at step " +
                 std::to_string(then.steps()));
}

LinearWarmup::LinearWarmup(const LinearWarmup& other)
    : LrScheduler(other),
      then_(other.then_->clone()),
      warmup_steps_(other.warmup_steps_),
      start_factor_(other.start_factor_) {}

LinearWarmup& LinearWarmup::operator=(const LinearWarmup& other) {
  if (this != &other) {
    LrScheduler::operator=(other);
    then_ = other.then_->clone();
    warmup_steps_ = other.warmup_steps_;
    start_factor_ = other.start_factor_;
  }
  return *this;
}

double LinearWarmup::lr() const {
  if (steps() >= warmup_steps_) return then_->lr();
  // LinearLR's closed form with end_factor 1 and total_iters = warmup_steps.
  return then_->base_lr() *
         (start_factor_ + (1.0 - start_factor_) * static_cast<double>(steps()) / static_cast<double>(warmup_steps_));
}

void LinearWarmup::advance(std::optional<double> metric) {
  // The wrapped schedule stays at its step 0 until the warmup is over, then moves with us.
  if (steps() < warmup_steps_) return;
  if (metric)
    then_->step(*metric);
  else
    then_->step();
}

void LinearWarmup::save(State& state) const {
  for (const auto& [key, value] : then_->state().numbers) state.numbers[kThen + key] = value;
}

void LinearWarmup::restore(const State& state, std::int64_t steps) {
  State then_state;
  for (const auto& [key, value] : state.numbers)
    if (key.rfind(kThen, 0) == 0) then_state.numbers[key.substr(kThen.size())] = value;
  const std::int64_t then_steps = detail::state_count(state, kThen + "step", name());
  const std::int64_t expected = std::max<std::int64_t>(0, steps - warmup_steps_);
  KILN_CHECK(then_steps == expected, name(),
             "\"then.step\" in the state must be " + std::to_string(expected) + " at step " + std::to_string(steps) +
                 " with warmup_steps=" + std::to_string(warmup_steps_) + ", got " + std::to_string(then_steps));
  then_->load_state(then_state);  // last: it leaves `then_` unchanged if it throws
}

std::unique_ptr<LrScheduler> LinearWarmup::clone() const { return std::make_unique<LinearWarmup>(*this); }

std::string LinearWarmup::describe() const {
  return "warmup_steps=" + std::to_string(warmup_steps_) + ", start_factor=" + number_text(start_factor_) + ", then " +
         then_->name() + "(" + then_->describe() + ")";
}

// NoamLr ----------------------------------------------------------------------------------------

NoamLr::NoamLr(double base_lr, std::int64_t d_model, std::int64_t warmup_steps)
    : base_lr_(base_lr), d_model_(d_model), warmup_steps_(warmup_steps) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_count(name(), "d_model", d_model, 1);
  detail::check_count(name(), "warmup_steps", warmup_steps, 1);
}

double NoamLr::lr() const {
  const double n = static_cast<double>(steps() + 1);
  return base_lr_ * (std::pow(static_cast<double>(d_model_), -0.5) *
                     std::min(std::pow(n, -0.5), n * std::pow(static_cast<double>(warmup_steps_), -1.5)));
}

std::unique_ptr<LrScheduler> NoamLr::clone() const { return std::make_unique<NoamLr>(*this); }

std::string NoamLr::describe() const {
  return "base_lr=" + number_text(base_lr_) + ", d_model=" + std::to_string(d_model_) +
         ", warmup_steps=" + std::to_string(warmup_steps_);
}

}  // namespace kiln::optim
