// torch's ReduceLROnPlateau: the lr is multiplied by `factor` when the metric has not improved
// for more than `patience` steps, then the count of bad steps pauses for `cooldown` steps.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/base/error.h"
#include "kiln/optim/lr_schedule_checks.h"
#include "kiln/optim/lr_scheduler.h"

// torch rounds every operation; let no multiply-add fuse (GCC contracts them under -march=native),
// or the eps test of a reduction moves off torch's.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln::optim {

using detail::number_text;

ReduceLrOnPlateau::ReduceLrOnPlateau(double base_lr, PlateauOptions options)
    : base_lr_(base_lr), options_(options), lr_(base_lr) {
  const PlateauOptions& o = options_;
  detail::check_learning_rate(name(), "base_lr", base_lr);
  KILN_CHECK(o.mode == PlateauMode::min || o.mode == PlateauMode::max, name(),
             "unknown mode " + std::to_string(static_cast<int>(o.mode)) + " (PlateauMode::min or PlateauMode::max)");
  KILN_CHECK(o.threshold_mode == ThresholdMode::rel || o.threshold_mode == ThresholdMode::abs, name(),
             "unknown threshold_mode " + std::to_string(static_cast<int>(o.threshold_mode)) +
                 " (ThresholdMode::rel or ThresholdMode::abs)");
  KILN_CHECK(o.factor >= 0.0 && o.factor < 1.0, name(), "factor must be in [0, 1), got " + number_text(o.factor));
  detail::check_count(name(), "patience", o.patience, 0);
  KILN_CHECK(std::isfinite(o.threshold) && o.threshold >= 0.0, name(),
             "threshold must be a finite number >= 0, got " + number_text(o.threshold));
  detail::check_count(name(), "cooldown", o.cooldown, 0);
  detail::check_learning_rate(name(), "min_lr", o.min_lr);
  KILN_CHECK(std::isfinite(o.eps) && o.eps >= 0.0, name(),
             "eps must be a finite number >= 0, got " + number_text(o.eps));
  // torch's "mode_worse": any first metric improves on it.
  best_ =
      o.mode == PlateauMode::min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

bool ReduceLrOnPlateau::is_better(double metric) const {
  const PlateauOptions& o = options_;
  if (o.mode == PlateauMode::min)
    return o.threshold_mode == ThresholdMode::rel ? metric < best_ * (1. - o.threshold) : metric < best_ - o.threshold;
  return o.threshold_mode == ThresholdMode::rel ? metric > best_ * (o.threshold + 1.) : metric > best_ + o.threshold;
}

void ReduceLrOnPlateau::advance(std::optional<double> metric) {
  KILN_CHECK(metric.has_value(), name(),
             "step() needs the metric to watch: call step(metric) (step " + std::to_string(steps()) + ")");
  if (is_better(*metric)) {
    best_ = *metric;
    num_bad_ = 0;
  } else {
    ++num_bad_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_ = 0;  // bad steps during the cooldown do not count
  }
  if (num_bad_ > options_.patience) {
    const double reduced = std::max(lr_ * options_.factor, options_.min_lr);
    if (lr_ - reduced > options_.eps) lr_ = reduced;
    cooldown_counter_ = options_.cooldown;
    num_bad_ = 0;
  }
}

void ReduceLrOnPlateau::save(State& state) const {
  state.numbers["lr"] = lr_;
  state.numbers["best"] = best_;  // +-inf before the first metric
  state.numbers["num_bad"] = static_cast<double>(num_bad_);
  state.numbers["cooldown_counter"] = static_cast<double>(cooldown_counter_);
}

void ReduceLrOnPlateau::restore(const State& state, std::int64_t) {
  const double lr = detail::state_number(state, "lr", name());
  KILN_CHECK(lr >= 0.0, name(), "\"lr\" in the state must be >= 0, got " + number_text(lr));
  const double best = detail::state_number(state, "best", name(), /*finite=*/false);
  // A count past patience would have reduced the lr already.
  const std::int64_t num_bad = detail::state_count(state, "num_bad", name(), options_.patience);
  const std::int64_t cooldown_counter = detail::state_count(state, "cooldown_counter", name(), options_.cooldown);
  lr_ = lr;
  best_ = best;
  num_bad_ = num_bad;
  cooldown_counter_ = cooldown_counter;
}

std::unique_ptr<LrScheduler> ReduceLrOnPlateau::clone() const { return std::make_unique<ReduceLrOnPlateau>(*this); }

std::string ReduceLrOnPlateau::describe() const {
  const PlateauOptions& o = options_;
  return "base_lr=" + number_text(base_lr_) + ", mode=" + (o.mode == PlateauMode::min ? "min" : "max") +
         ", factor=" + number_text(o.factor) + ", patience=" + std::to_string(o.patience) +
         ", threshold=" + number_text(o.threshold) +
         ", threshold_mode=" + (o.threshold_mode == ThresholdMode::rel ? "rel" : "abs") +
         ", cooldown=" + std::to_string(o.cooldown) + ", min_lr=" + number_text(o.min_lr) +
         ", eps=" + number_text(o.eps);
}

}  // namespace kiln::optim
