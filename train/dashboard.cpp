#include "kiln/train/dashboard.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "kiln/base/error.h"
#include "kiln/train/dashboard_state.h"
#include "kiln/train/dashboard_terminal.h"

namespace kiln::train {

namespace {

DashboardMode resolve_mode(DashboardMode requested, const detail::TerminalInfo& terminal) {
  if (requested != DashboardMode::automatic) return requested;
  if (const char* env = std::getenv("KILN_DASHBOARD"); env && *env) {
    const std::string_view value = env;
    if (value == "live") return DashboardMode::live;
    if (value == "plain") return DashboardMode::plain;
    if (value == "off") return DashboardMode::off;
    KILN_CHECK(value == "auto", "Dashboard",
               "KILN_DASHBOARD='" + std::string(value) + "': expected live, plain, off or auto");
  }
  return terminal.interactive ? DashboardMode::live : DashboardMode::plain;
}

}  // namespace

Dashboard::Dashboard(DashboardOptions options)
    : options_(std::move(options)), state_(std::make_unique<detail::DashboardState>()) {
  KILN_CHECK(options_.points_per_epoch >= 1, "Dashboard",
             "points_per_epoch must be at least 1, got " + std::to_string(options_.points_per_epoch));
  std::ostream& out = options_.out ? *options_.out : std::cout;
  const detail::TerminalInfo terminal = detail::inspect_terminal(out);
  mode_ = resolve_mode(options_.mode, terminal);
  detail::ViewOptions view{options_.width, options_.height, options_.color.value_or(terminal.color), {}};
  switch (mode_) {
    case DashboardMode::live:
      view.interval = options_.redraw_interval;
      renderer_ = detail::make_live_view(out, view);
      break;
    case DashboardMode::plain:
      view.interval = options_.plain_interval;
      renderer_ = detail::make_plain_view(out, view);
      break;
    default: renderer_ = std::make_unique<detail::DashboardRenderer>(); break;
  }
  state_->now = state_->run_start = state_->epoch_start = state_->phase_start = state_->phase_end = now();
}

Dashboard::~Dashboard() = default;

std::chrono::steady_clock::time_point Dashboard::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

void Dashboard::set_better(std::string_view metric, Better better) {
  std::lock_guard lock(mutex_);
  state_->history.set_better(metric, better);
}

void Dashboard::begin_run(const RunInfo& run) {
  std::lock_guard lock(mutex_);
  state_->run = run;
  if (state_->run.started == std::chrono::system_clock::time_point{})
    state_->run.started = std::chrono::system_clock::now();
  state_->now = state_->run_start = state_->epoch_start = now();
  renderer_->run_began(*state_);
}

namespace {

// The epoch running until now counts toward the mean epoch time behind the run's ETA.
void finish_epoch(detail::DashboardState& state) {
  if (state.epoch == 0) return;
  state.finished_epochs_seconds += std::chrono::duration<double>(state.now - state.epoch_start).count();
  ++state.finished_epochs;
}

}  // namespace

void Dashboard::begin_epoch(int epoch, int epochs) {
  KILN_CHECK(epoch >= 1 && epochs >= 0, "Dashboard::begin_epoch",
             "epochs count from 1 (got epoch " + std::to_string(epoch) + " of " + std::to_string(epochs) + ")");
  std::lock_guard lock(mutex_);
  state_->now = now();
  finish_epoch(*state_);
  state_->epoch = epoch;
  state_->epochs = epochs;
  state_->epoch_start = state_->now;
}

void Dashboard::begin_phase(Split split, std::int64_t total_batches) {
  KILN_CHECK(total_batches >= 0, "Dashboard::begin_phase",
             "total_batches must be 0 (unknown) or more, got " + std::to_string(total_batches));
  std::lock_guard lock(mutex_);
  KILN_CHECK(state_->epoch >= 1, "Dashboard::begin_phase", "called before begin_epoch");
  detail::DashboardState& s = *state_;
  s.now = s.phase_start = now();
  s.split = split;
  s.in_phase = true;
  s.total_batches = total_batches;
  s.batches_done = s.items_done = s.point_batches = 0;
  s.current.clear();
  renderer_->phase_began(s);
}

void Dashboard::update(std::int64_t batches_done, std::int64_t items_done, const MetricValues& current) {
  KILN_CHECK(batches_done >= 0 && items_done >= 0, "Dashboard::update",
             "batch and item counts must not be negative (got " + std::to_string(batches_done) + " batches, " +
                 std::to_string(items_done) + " items)");
  for (const MetricValue& m : current) KILN_CHECK(!m.name.empty(), "Dashboard::update", "a metric name is empty");
  std::lock_guard lock(mutex_);
  detail::DashboardState& s = *state_;
  if (!s.in_phase) return;
  s.now = now();
  // Train points for the charts, points_per_epoch of them evenly spread over the epoch: a point
  // is kept when the values' batch crosses into the next slot after the last point's. Validation
  // is charted by epoch summaries.
  if (s.split == Split::train && s.total_batches > 0) {
    const auto slot = [&](std::int64_t batch) { return batch * options_.points_per_epoch / s.total_batches; };
    if (batches_done > s.point_batches && slot(batches_done) > slot(s.point_batches)) {
      const double x =
          (s.epoch - 1) + std::min(1.0, static_cast<double>(batches_done) / static_cast<double>(s.total_batches));
      for (const MetricValue& m : current) s.history.record_point(m.name, Split::train, x, m.value);
      s.point_batches = batches_done;
    }
  }
  s.batches_done = std::max(s.batches_done, batches_done);
  s.items_done = std::max(s.items_done, items_done);
  s.current = current;
  renderer_->progressed(s);
}

void Dashboard::progress(std::int64_t batches_done, std::int64_t items_done) {
  KILN_CHECK(batches_done >= 0 && items_done >= 0, "Dashboard::progress",
             "batch and item counts must not be negative (got " + std::to_string(batches_done) + " batches, " +
                 std::to_string(items_done) + " items)");
  std::lock_guard lock(mutex_);
  detail::DashboardState& s = *state_;
  if (!s.in_phase) return;
  s.now = now();
  s.batches_done = std::max(s.batches_done, batches_done);
  s.items_done = std::max(s.items_done, items_done);
  renderer_->progressed(s);
}

void Dashboard::tick() {
  std::lock_guard lock(mutex_);
  detail::DashboardState& s = *state_;
  if (!s.in_phase || s.ended) return;
  s.now = now();
  renderer_->progressed(s);
}

void Dashboard::set_memory(double resident_mib, double pool_mib) {
  std::lock_guard lock(mutex_);
  state_->resident_mib = resident_mib;
  state_->pool_mib = pool_mib;
}

void Dashboard::end_phase(const MetricValues& summary) {
  std::lock_guard lock(mutex_);
  detail::DashboardState& s = *state_;
  KILN_CHECK(s.in_phase, "Dashboard::end_phase", "called without begin_phase");
  s.now = s.phase_end = now();
  for (const MetricValue& m : summary) s.history.record_epoch(m.name, s.split, s.epoch, m.value);
  s.in_phase = false;
  renderer_->phase_ended(s, summary);
}

void Dashboard::message(std::string_view text) {
  std::lock_guard lock(mutex_);
  state_->now = now();
  renderer_->message(*state_, text);
}

RunOutcome Dashboard::end_run(RunOutcome outcome) {
  if (outcome.ended == std::chrono::system_clock::time_point{}) outcome.ended = std::chrono::system_clock::now();
  std::lock_guard lock(mutex_);
  detail::DashboardState& s = *state_;
  s.now = now();
  if (s.in_phase) s.phase_end = s.now, s.in_phase = false;
  finish_epoch(s);
  s.epoch_start = s.now;
  s.ended = true;
  renderer_->run_ended(s, outcome);
  return outcome;
}

void Dashboard::restore_history(MetricHistory history) {
  std::lock_guard lock(mutex_);
  state_->history = std::move(history);
}

MetricHistory Dashboard::history() const {
  std::lock_guard lock(mutex_);
  return state_->history;
}

RunInfo Dashboard::run() const {
  std::lock_guard lock(mutex_);
  return state_->run;
}

}  // namespace kiln::train
