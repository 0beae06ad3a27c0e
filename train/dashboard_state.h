// What the dashboard knows about the run at one moment, and the interface its two views (live,
// plain) implement. Both are only touched under the Dashboard's mutex.
#pragma once
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/train/metric_history.h"
#include "kiln/train/run_info.h"

namespace kiln::train::detail {

struct DashboardState {
  using TimePoint = std::chrono::steady_clock::time_point;

  RunInfo run{};
  int epoch = 0;   // 0 until the first begin_epoch
  int epochs = 0;  // 0: unknown
  Split split = Split::train;
  bool in_phase = false;  // false between end_phase and the next begin_phase
  std::int64_t total_batches = 0, batches_done = 0, items_done = 0;
  TimePoint now{}, run_start{}, epoch_start{}, phase_start{}, phase_end{};
  int finished_epochs = 0;
  double finished_epochs_seconds = 0;
  std::int64_t point_batches = 0;  // the batch of the last train point kept for the charts
  MetricValues current{};  // the phase's running values, in the Learner's order
  std::optional<double> resident_mib{}, pool_mib{};  // set_memory; shown in the header
  MetricHistory history{};
  bool ended = false;  // end_run was called

  double run_seconds() const;
  double phase_seconds() const;  // frozen at end_phase
  double items_per_second() const;
  std::optional<double> phase_fraction() const;  // none when the total is unknown
  std::optional<double> phase_eta_seconds() const;
  // From the mean time of the finished epochs: none before the first epoch ends or when the
  // number of epochs is unknown.
  std::optional<double> run_eta_seconds() const;
  // "epoch 3/10", or "epoch 3" when the total is unknown.
  std::string epoch_label() const;
  // Training steps of the run so far (finished epochs' batches plus this epoch's): while a
  // training phase runs, none otherwise.
  std::optional<std::int64_t> train_step() const;
  // Metric names in display order: the current values' order, then any others in the history.
  std::vector<std::string> metric_names() const;
  // The value a table shows for a split: the running value while that phase runs, else the last
  // epoch summary, else the last point (a metric reported only during training, like the
  // learning rate).
  std::optional<double> shown_value(const std::string& metric, Split split) const;
};

// A view of the run. Each call comes with the state already updated.
class DashboardRenderer {
 public:
  virtual ~DashboardRenderer() = default;
  virtual void run_began(const DashboardState&) {}
  virtual void phase_began(const DashboardState&) {}
  virtual void progressed(const DashboardState&) {}  // every update: the view throttles itself
  virtual void phase_ended(const DashboardState&, const MetricValues& summary) {}
  virtual void message(const DashboardState&, std::string_view text) {}
  virtual void run_ended(const DashboardState&, const RunOutcome& outcome) {}
};

struct ViewOptions {
  int width = 0, height = 0;  // 0: the terminal's
  bool color = false;
  std::chrono::milliseconds interval{};
};

std::unique_ptr<DashboardRenderer> make_live_view(std::ostream& out, const ViewOptions& options);
std::unique_ptr<DashboardRenderer> make_plain_view(std::ostream& out, const ViewOptions& options);

// The lines both views print and keep: the run's header, a phase's summary, the run's end.
std::vector<std::string> run_header_lines(const DashboardState& state);
std::string phase_summary_line(const DashboardState& state, const MetricValues& summary);
std::vector<std::string> run_summary_lines(const DashboardState& state, const RunOutcome& outcome);

// The live view's block: a header, the progress bar, the metrics table and the charts, each line
// exactly `width` columns, at most max_lines lines (charts that do not fit are left out).
std::vector<std::string> live_frame_lines(const DashboardState& state, int width, int max_lines, bool color);

}  // namespace kiln::train::detail
