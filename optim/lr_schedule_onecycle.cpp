// The one-cycle policy (Smith, "Super-Convergence"), as torch's OneCycleLR: the lr rises from
// max_lr / div_factor to max_lr over pct_start of the steps, then falls to
// max_lr / div_factor / final_div_factor, while the momentum moves the opposite way. Phase ends
// are torch's (fractional) step numbers and each value is torch's arithmetic, term for term.
#include <cmath>
#include <numbers>

#include "kiln/base/error.h"
#include "kiln/optim/lr_schedule_checks.h"
#include "kiln/optim/lr_scheduler.h"

// torch rounds every operation; let no multiply-add fuse (GCC contracts them under -march=native),
// or phase ends and the comparisons made on them move off torch's values. GCC does not apply the
// pragma to a constructor declared before it: the constructor does no arithmetic of its own.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln::optim {

using detail::number_text;

namespace {

double anneal(AnnealStrategy strategy, double start, double end, double pct) {
  if (strategy == AnnealStrategy::cos) {
    const double cos_out = std::cos(std::numbers::pi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

// torch's float(scale * total_steps) - k: the product rounded before the subtraction.
double phase_end(double scale, double total_steps, double k) { return scale * total_steps - k; }

const char* strategy_name(AnnealStrategy s) { return s == AnnealStrategy::cos ? "cos" : "linear"; }

}  // namespace

OneCycleLr::OneCycleLr(double max_lr, std::int64_t total_steps, OneCycleOptions options)
    : max_lr_(max_lr), total_steps_(total_steps), options_(options) {
  const OneCycleOptions& o = options_;
  detail::check_learning_rate(name(), "max_lr", max_lr);
  detail::check_count(name(), "total_steps", total_steps, 1);
  detail::check_in_range(name(), "pct_start", o.pct_start, 0.0, 1.0);
  KILN_CHECK(o.anneal_strategy == AnnealStrategy::cos || o.anneal_strategy == AnnealStrategy::linear, name(),
             "unknown anneal_strategy " + std::to_string(static_cast<int>(o.anneal_strategy)) +
                 " (AnnealStrategy::cos or AnnealStrategy::linear)");
  detail::check_positive(name(), "div_factor", o.div_factor);
  detail::check_positive(name(), "final_div_factor", o.final_div_factor);
  if (o.cycle_momentum) {
    detail::check_in_range(name(), "base_momentum", o.base_momentum, 0.0, 1.0);
    detail::check_in_range(name(), "max_momentum", o.max_momentum, 0.0, 1.0);
  }
  initial_lr_ = max_lr / o.div_factor;
  const double min_lr = initial_lr_ / o.final_div_factor;
  const double total = static_cast<double>(total_steps);
  const double rise_end = phase_end(o.pct_start, total, 1);
  const double last = static_cast<double>(total_steps - 1);
  if (o.three_phase) {
    phases_ = {{rise_end, initial_lr_, max_lr, o.max_momentum, o.base_momentum},
               {phase_end(2 * o.pct_start, total, 2), max_lr, initial_lr_, o.base_momentum, o.max_momentum},
               {last, initial_lr_, min_lr, o.max_momentum, o.max_momentum}};
  } else {
    phases_ = {{rise_end, initial_lr_, max_lr, o.max_momentum, o.base_momentum},
               {last, max_lr, min_lr, o.base_momentum, o.max_momentum}};
  }
}

OneCycleLr::Point OneCycleLr::at(std::int64_t step) const {
  const double s = static_cast<double>(step);
  double start_step = 0;
  for (std::size_t i = 0; i < phases_.size(); ++i) {
    const Phase& phase = phases_[i];
    if (s <= phase.end_step || i + 1 == phases_.size()) {
      // A phase of no length (pct_start * total_steps == 1, or pct_start = 1 at the last step)
      // is at its end; torch divides by zero there.
      const double length = phase.end_step - start_step;
      const double pct = length == 0.0 ? 1.0 : (s - start_step) / length;
      return {anneal(options_.anneal_strategy, phase.start_lr, phase.end_lr, pct),
              anneal(options_.anneal_strategy, phase.start_momentum, phase.end_momentum, pct)};
    }
    start_step = phase.end_step;
  }
  return {};  // not reached: the last phase takes every step
}

double OneCycleLr::lr() const { return at(steps()).lr; }

std::optional<double> OneCycleLr::momentum() const {
  if (!options_.cycle_momentum) return std::nullopt;
  return at(steps()).momentum;
}

void OneCycleLr::advance(std::optional<double>) {
  // torch allows total_steps calls of step() (the last lands one past the schedule's end).
  KILN_CHECK(steps() < total_steps_, name(),
             "tried to step " + std::to_string(steps() + 1) + " times; total_steps is " + std::to_string(total_steps_));
}

void OneCycleLr::restore(const State& state, std::int64_t) { detail::state_count(state, "step", name(), total_steps_); }

std::unique_ptr<LrScheduler> OneCycleLr::clone() const { return std::make_unique<OneCycleLr>(*this); }

std::string OneCycleLr::describe() const {
  const OneCycleOptions& o = options_;
  std::string text =
      "max_lr=" + number_text(max_lr_) + ", total_steps=" + std::to_string(total_steps_) +
      ", pct_start=" + number_text(o.pct_start) + ", anneal_strategy=" + strategy_name(o.anneal_strategy) +
      ", div_factor=" + number_text(o.div_factor) + ", final_div_factor=" + number_text(o.final_div_factor) +
      ", three_phase=" + (o.three_phase ? "true" : "false");
  if (o.cycle_momentum)
    text += ", base_momentum=" + number_text(o.base_momentum) + ", max_momentum=" + number_text(o.max_momentum);
  return text;
}

}  // namespace kiln::optim
