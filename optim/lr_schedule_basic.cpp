// The schedules that are a closed formula of the step: constant, constant factor, step,
// multi-step, exponential and linear. torch computes them recursively (lr *= gamma at each
// milestone); the closed forms here are torch's own _get_closed_form_lr and agree with its
// stepped values to a few units in the last place.
#include <algorithm>
#include <cmath>

#include "kiln/base/error.h"
#include "kiln/optim/lr_schedule_checks.h"
#include "kiln/optim/lr_scheduler.h"

namespace kiln::optim {

using detail::number_text;

// ConstantLr ------------------------------------------------------------------------------------

ConstantLr::ConstantLr(double base_lr) : base_lr_(base_lr) { detail::check_learning_rate(name(), "base_lr", base_lr); }

std::unique_ptr<LrScheduler> ConstantLr::clone() const { return std::make_unique<ConstantLr>(*this); }

std::string ConstantLr::describe() const { return "base_lr=" + number_text(base_lr_); }

// ConstantFactorLr ------------------------------------------------------------------------------

ConstantFactorLr::ConstantFactorLr(double base_lr, double factor, std::int64_t total_iters)
    : base_lr_(base_lr), factor_(factor), total_iters_(total_iters) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_in_range(name(), "factor", factor, 0.0, 1.0);
  // torch accepts 0, but then keeps base_lr * factor for ever: not what the setting says.
  detail::check_count(name(), "total_iters", total_iters, 1);
}

double ConstantFactorLr::lr() const { return base_lr_ * (factor_ + (steps() >= total_iters_ ? 1.0 - factor_ : 0.0)); }

std::unique_ptr<LrScheduler> ConstantFactorLr::clone() const { return std::make_unique<ConstantFactorLr>(*this); }

std::string ConstantFactorLr::describe() const {
  return "base_lr=" + number_text(base_lr_) + ", factor=" + number_text(factor_) +
         ", total_iters=" + std::to_string(total_iters_);
}

// StepLr ----------------------------------------------------------------------------------------

StepLr::StepLr(double base_lr, std::int64_t step_size, double gamma)
    : base_lr_(base_lr), gamma_(gamma), step_size_(step_size) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_count(name(), "step_size", step_size, 1);
  detail::check_positive(name(), "gamma", gamma);
}

double StepLr::lr() const { return base_lr_ * std::pow(gamma_, static_cast<double>(steps() / step_size_)); }

std::unique_ptr<LrScheduler> StepLr::clone() const { return std::make_unique<StepLr>(*this); }

std::string StepLr::describe() const {
  return "base_lr=" + number_text(base_lr_) + ", step_size=" + std::to_string(step_size_) +
         ", gamma=" + number_text(gamma_);
}

// MultiStepLr -----------------------------------------------------------------------------------

MultiStepLr::MultiStepLr(double base_lr, std::vector<std::int64_t> milestones, double gamma)
    : base_lr_(base_lr), gamma_(gamma), milestones_(std::move(milestones)) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_positive(name(), "gamma", gamma);
  for (std::size_t i = 0; i < milestones_.size(); ++i) {
    KILN_CHECK(
        milestones_[i] >= 0, name(),
        "milestones must be >= 0, got milestones[" + std::to_string(i) + "] = " + std::to_string(milestones_[i]));
    KILN_CHECK(i == 0 || milestones_[i] >= milestones_[i - 1], name(),
               "milestones must be in increasing order, got " + std::to_string(milestones_[i - 1]) + " before " +
                   std::to_string(milestones_[i]));
  }
}

double MultiStepLr::lr() const {
  // torch's closed form: bisect_right over the sorted milestones.
  const auto reached = std::upper_bound(milestones_.begin(), milestones_.end(), steps()) - milestones_.begin();
  return base_lr_ * std::pow(gamma_, static_cast<double>(reached));
}

std::unique_ptr<LrScheduler> MultiStepLr::clone() const { return std::make_unique<MultiStepLr>(*this); }

std::string MultiStepLr::describe() const {
  std::string list;
  for (std::int64_t m : milestones_) list += (list.empty() ? "" : ", ") + std::to_string(m);
  return "base_lr=" + number_text(base_lr_) + ", milestones=[" + list + "], gamma=" + number_text(gamma_);
}

// ExponentialLr ---------------------------------------------------------------------------------

ExponentialLr::ExponentialLr(double base_lr, double gamma) : base_lr_(base_lr), gamma_(gamma) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_positive(name(), "gamma", gamma);
}

double ExponentialLr::lr() const { return base_lr_ * std::pow(gamma_, static_cast<double>(steps())); }

std::unique_ptr<LrScheduler> ExponentialLr::clone() const { return std::make_unique<ExponentialLr>(*this); }

std::string ExponentialLr::describe() const {
  return "base_lr=" + number_text(base_lr_) + ", gamma=" + number_text(gamma_);
}

// LinearLr --------------------------------------------------------------------------------------

LinearLr::LinearLr(double base_lr, double start_factor, double end_factor, std::int64_t total_iters)
    : base_lr_(base_lr), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_in_range(name(), "start_factor", start_factor, 0.0, 1.0);
  detail::check_in_range(name(), "end_factor", end_factor, 0.0, 1.0);
  // torch's closed form divides by total_iters (its recursive form then sticks at start_factor).
  detail::check_count(name(), "total_iters", total_iters, 1);
}

double LinearLr::lr() const {
  const double done = static_cast<double>(std::min(total_iters_, steps()));
  return base_lr_ * (start_factor_ + (end_factor_ - start_factor_) * done / static_cast<double>(total_iters_));
}

std::unique_ptr<LrScheduler> LinearLr::clone() const { return std::make_unique<LinearLr>(*this); }

std::string LinearLr::describe() const {
  return "base_lr=" + number_text(base_lr_) + ", start_factor=" + number_text(start_factor_) +
         ", end_factor=" + number_text(end_factor_) + ", total_iters=" + std::to_string(total_iters_);
}

}  // namespace kiln::optim
