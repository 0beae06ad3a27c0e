// The LrScheduler base: stepping, and saving and loading progress as a State. Each scheduler's
// state starts with a marker "kind.<name>" so that a state is only loaded into the kind of
// scheduler that saved it; a scheduler wrapping another (LinearWarmup) nests the other's state
// under a prefix ("then."), marker included.
#include <charconv>
#include <cmath>
#include <map>

#include "kiln/base/error.h"
#include "kiln/optim/lr_schedule_checks.h"
#include "kiln/optim/lr_scheduler.h"

namespace kiln::optim {

namespace {

constexpr const char* kKindPrefix = "kind.";

// The kinds named by markers directly under `prefix` ("" for the top, "then." for a wrapped one).
std::vector<std::string> kinds_at(const State& state, const std::string& prefix) {
  std::vector<std::string> kinds;
  const std::string marker = prefix + kKindPrefix;
  for (const auto& [key, value] : state.numbers) {
    if (key.rfind(marker, 0) != 0) continue;
    const std::string kind = key.substr(marker.size());
    if (kind.find('.') == std::string::npos) kinds.push_back(kind);
  }
  return kinds;
}

// Every marker of `expected` must be matched by the same kind at the same place in `given`.
void check_kinds(const State& given, const State& expected, const std::string& scheduler) {
  for (const auto& [key, value] : expected.numbers) {
    const std::size_t at = key.rfind(kKindPrefix);
    if (at == std::string::npos || (at != 0 && key[at - 1] != '.')) continue;
    const std::string prefix = key.substr(0, at);
    const std::string ours = key.substr(at + std::string(kKindPrefix).size());
    const std::vector<std::string> theirs = kinds_at(given, prefix);
    const std::string where = prefix.empty() ? std::string() : " under \"" + prefix + "\"";
    KILN_CHECK(!theirs.empty(), scheduler,
               "the state names no scheduler kind" + where + " (no \"" + key + "\"); it was not saved by " + ours +
                   ".state()");
    KILN_CHECK(theirs.size() == 1 && theirs[0] == ours, scheduler,
               "a state saved by " + theirs[0] + where + " cannot be loaded into " + ours);
  }
}

}  // namespace

void LrScheduler::step() {
  advance(std::nullopt);
  ++steps_;
}

void LrScheduler::step(double metric) {
  KILN_CHECK(!std::isnan(metric), name(), "step(metric) got a NaN metric at step " + std::to_string(steps_));
  advance(metric);
  ++steps_;
}

State LrScheduler::state() const {
  State state;
  state.numbers[kKindPrefix + name()] = 1.0;
  state.numbers["step"] = static_cast<double>(steps_);
  save(state);
  return state;
}

void LrScheduler::load_state(const State& state) {
  const std::string scheduler = name();
  KILN_CHECK(state.tensors.empty(), scheduler,
             "a scheduler's state holds no tensors, got " + std::to_string(state.tensors.size()) +
                 " (is it an optimizer's state?)");
  const State expected = this->state();
  check_kinds(state, expected, scheduler);
  for (const auto& [key, value] : expected.numbers)
    KILN_CHECK(state.numbers.count(key) == 1, scheduler, "the state lacks \"" + key + "\"");
  for (const auto& [key, value] : state.numbers)
    KILN_CHECK(expected.numbers.count(key) == 1, scheduler, "unexpected \"" + key + "\" in the state");
  const std::int64_t steps = detail::state_count(state, "step", scheduler);
  restore(state, steps);
  steps_ = steps;
}

namespace detail {

std::string number_text(double v) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, v, std::chars_format::general).ptr;
  return std::string(text, end);
}

void check_learning_rate(const std::string& scheduler, const char* what, double v) {
  KILN_CHECK(std::isfinite(v) && v >= 0.0, scheduler,
             std::string(what) + " must be a finite number >= 0, got " + number_text(v));
}

void check_count(const std::string& scheduler, const char* what, std::int64_t v, std::int64_t min) {
  KILN_CHECK(v >= min, scheduler,
             std::string(what) + " must be >= " + std::to_string(min) + ", got " + std::to_string(v));
  KILN_CHECK(v <= kMaxStateCount, scheduler, std::string(what) + " must be <= 2^53, got " + std::to_string(v));
}

void check_in_range(const std::string& scheduler, const char* what, double v, double lo, double hi) {
  KILN_CHECK(
      v >= lo && v <= hi, scheduler,
      std::string(what) + " must be in [" + number_text(lo) + ", " + number_text(hi) + "], got " + number_text(v));
}

void check_positive(const std::string& scheduler, const char* what, double v) {
  KILN_CHECK(std::isfinite(v) && v > 0.0, scheduler,
             std::string(what) + " must be a finite number > 0, got " + number_text(v));
}

std::int64_t state_count(const State& state, const std::string& key, const std::string& scheduler, std::int64_t max) {
  const double v = state.numbers.at(key);
  KILN_CHECK(
      v >= 0.0 && v <= static_cast<double>(max) && v == std::floor(v), scheduler,
      "\"" + key + "\" in the state must be a whole number in [0, " + std::to_string(max) + "], got " + number_text(v));
  return static_cast<std::int64_t>(v);
}

double state_number(const State& state, const std::string& key, const std::string& scheduler, bool finite) {
  const double v = state.numbers.at(key);
  KILN_CHECK(finite ? std::isfinite(v) : !std::isnan(v), scheduler,
             "\"" + key + "\" in the state must be " + (finite ? "finite" : "a number") + ", got " + number_text(v));
  return v;
}

}  // namespace detail
}  // namespace kiln::optim
