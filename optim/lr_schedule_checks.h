// What the learning-rate schedulers share besides the base class: the argument checks (each a
// kiln::Error naming the scheduler and the value) and the reading of numbers back from a State.
#pragma once
#include <cstdint>
#include <string>

#include "kiln/optim/state.h"

namespace kiln::optim::detail {

// Shortest text that reads back as the same double, as %g writes it ("0.1", "0.0001", "1e-08").
std::string number_text(double v);

// A learning rate (or eta_min, min_lr): finite and >= 0.
void check_learning_rate(const std::string& scheduler, const char* what, double v);
// A count of steps: in [min, 2^53] (beyond that, doubles and step counts part ways).
void check_count(const std::string& scheduler, const char* what, std::int64_t v, std::int64_t min);
// A finite value in [lo, hi] (a factor, pct_start, a momentum).
void check_in_range(const std::string& scheduler, const char* what, double v, double lo, double hi);
// A finite value > 0 (gamma, div_factor).
void check_positive(const std::string& scheduler, const char* what, double v);

// The number `key` of a state that load_state has checked for names: a whole number in
// [0, max] (step counts; the largest double that counts exactly by one is 2^53).
inline constexpr std::int64_t kMaxStateCount = std::int64_t{1} << 53;
std::int64_t state_count(const State& state, const std::string& key, const std::string& scheduler,
                         std::int64_t max = kMaxStateCount);
// Any number but NaN; with `finite`, no infinity either.
double state_number(const State& state, const std::string& key, const std::string& scheduler, bool finite = true);

}  // namespace kiln::optim::detail
