// Cosine annealing (torch's CosineAnnealingLR) and SGDR's warm restarts
// (CosineAnnealingWarmRestarts).
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/base/error.h"
#include "kiln/optim/lr_schedule_checks.h"
#include "kiln/optim/lr_scheduler.h"

// torch rounds every operation; let no multiply-add fuse (GCC contracts them under -march=native),
// or the recursion drifts off torch's values.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln::optim {

using detail::number_text;
using std::numbers::pi;

// CosineAnnealingLr -----------------------------------------------------------------------------

CosineAnnealingLr::CosineAnnealingLr(double base_lr, std::int64_t t_max, double eta_min)
    : base_lr_(base_lr), eta_min_(eta_min), lr_(base_lr), t_max_(t_max) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_count(name(), "t_max", t_max, 1);
  detail::check_learning_rate(name(), "eta_min", eta_min);
}

// torch's get_lr, term for term: each lr is the one before scaled by the ratio of consecutive
// cosine factors, except just past a trough (where that ratio would divide by 1 + cos(pi) = 0)
// where the step from the trough is added instead. Keeping the recursion rather than the closed
// form reproduces torch's stepped values, rounding included.
void CosineAnnealingLr::advance(std::optional<double>) {
  const std::int64_t t = steps() + 1;
  const double t_max = static_cast<double>(t_max_);
  if ((t - 1 - t_max_) % (2 * t_max_) == 0) {
    lr_ = lr_ + (base_lr_ - eta_min_) * (1 - std::cos(pi / t_max)) / 2;
  } else {
    lr_ = (1 + std::cos(pi * static_cast<double>(t) / t_max)) /
              (1 + std::cos(pi * static_cast<double>(t - 1) / t_max)) * (lr_ - eta_min_) +
          eta_min_;
  }
}

void CosineAnnealingLr::save(State& state) const { state.numbers["lr"] = lr_; }

void CosineAnnealingLr::restore(const State& state, std::int64_t) { lr_ = detail::state_number(state, "lr", name()); }

std::unique_ptr<LrScheduler> CosineAnnealingLr::clone() const { return std::make_unique<CosineAnnealingLr>(*this); }

std::string CosineAnnealingLr::describe() const {
  return "base_lr=" + number_text(base_lr_) + ", t_max=" + std::to_string(t_max_) +
         ", eta_min=" + number_text(eta_min_);
}

// CosineAnnealingWarmRestarts -------------------------------------------------------------------

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(double base_lr, std::int64_t t_0, std::int64_t t_mult,
                                                         double eta_min)
    : base_lr_(base_lr), eta_min_(eta_min), t_0_(t_0), t_mult_(t_mult) {
  detail::check_learning_rate(name(), "base_lr", base_lr);
  detail::check_count(name(), "t_0", t_0, 1);
  detail::check_count(name(), "t_mult", t_mult, 1);
  detail::check_learning_rate(name(), "eta_min", eta_min);
}

double CosineAnnealingWarmRestarts::lr() const {
  // Where the step falls: t_cur steps into a cycle of t_i steps (torch's T_cur and T_i, which it
  // advances one step at a time; derived here from the step count).
  std::int64_t t_cur = steps(), t_i = t_0_;
  if (t_mult_ == 1) {
    t_cur %= t_0_;
  } else {
    while (t_cur >= t_i) {
      t_cur -= t_i;
      // A cycle longer than any step count can reach is the last one: saturate, don't overflow.
      const std::int64_t longest = std::numeric_limits<std::int64_t>::max();
      t_i = t_i > longest / t_mult_ ? longest : t_i * t_mult_;
    }
  }
  return eta_min_ +
         (base_lr_ - eta_min_) * (1 + std::cos(pi * static_cast<double>(t_cur) / static_cast<double>(t_i))) / 2;
}

std::unique_ptr<LrScheduler> CosineAnnealingWarmRestarts::clone() const {
  return std::make_unique<CosineAnnealingWarmRestarts>(*this);
}

std::string CosineAnnealingWarmRestarts::describe() const {
  return "base_lr=" + number_text(base_lr_) + ", t_0=" + std::to_string(t_0_) + ", t_mult=" + std::to_string(t_mult_) +
         ", eta_min=" + number_text(eta_min_);
}

}  // namespace kiln::optim
