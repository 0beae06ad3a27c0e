// The training dashboard: what a run shows while it trains. The Learner tells it where the run
// is (epoch, phase, batch, items, current metric values); it draws a live view in a terminal —
// progress bar with ETA, a table of metrics, a chart per metric with train against valid —
// redrawn in place at most ~10 times a second, or plain lines when the output is a file or a
// pipe (CI logs). It also keeps the run's MetricHistory, which the HTML report draws at the end.
//
//   train::Dashboard dash;                          // live on a terminal, plain lines otherwise
//   dash.begin_run({.title = "mnist mlp", .device = "cpu", .settings = {{"lr", "0.001"}}});
//   for (int epoch = 1; epoch <= epochs; ++epoch) {
//     dash.begin_epoch(epoch, epochs);
//     dash.begin_phase(train::Split::train, batches);
//     for (...) dash.update(batch + 1, items, {{"loss", running_loss}, {"accuracy", running_acc}});
//     dash.end_phase({{"loss", epoch_loss}, {"accuracy", epoch_acc}});
//     ... the same for Split::valid ...
//   }
//   const train::RunOutcome outcome = dash.end_run({.status = "completed"});
//   train::write_html_report("run/report.html", dash.run(), outcome, dash.history());
//
// KILN_DASHBOARD=live|plain|off overrides the automatic choice. Every method may be called from
// any thread (updates from a worker while the main thread prints a message): one mutex orders
// them, and each frame or line goes out in a single write, so output never interleaves. Text
// printed straight to the same stream while a live view is on screen is overdrawn: use message().
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/train/metric_history.h"
#include "kiln/train/run_info.h"

namespace kiln::train {

namespace detail {
struct DashboardState;
class DashboardRenderer;
}  // namespace detail

enum class DashboardMode { automatic, live, plain, off };

struct DashboardOptions {
  // automatic: $KILN_DASHBOARD when set, else live when `out` is std::cout or std::cerr on a
  // terminal, else plain.
  DashboardMode mode = DashboardMode::automatic;
  // Where it writes; nullptr is std::cout: the dashboard is a training program's main output,
  // and `./train > run.log` then gets the plain lines in the log, in order with the program's own.
  std::ostream* out = nullptr;
  int width = 0;                                    // live view columns; 0: the terminal's, followed as it is resized
  int height = 0;                                   // the most lines the live view takes; 0: the terminal's rows - 1
  std::optional<bool> color{};                      // unset: on for a terminal unless $NO_COLOR is set
  std::chrono::milliseconds redraw_interval{100};   // live: at most one frame per interval
  std::chrono::milliseconds plain_interval{10000};  // plain: at most one progress line per interval
  int points_per_epoch = 100;                       // train points kept for the charts and the report per epoch
  // The time source (tests drive it by hand); unset: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock{};
};

class Dashboard {
 public:
  // Throws kiln::Error when $KILN_DASHBOARD holds anything but live, plain, off or auto.
  explicit Dashboard(DashboardOptions options = {});
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  // live, plain or off: the automatic choice resolved.
  DashboardMode mode() const { return mode_; }

  // For a metric whose name does not say which way it improves (see better_by_name).
  void set_better(std::string_view metric, Better better);

  void begin_run(const RunInfo& run);
  // epoch counts from 1; epochs is the planned total, 0 when unknown.
  void begin_epoch(int epoch, int epochs);
  // total_batches 0: unknown (no percentage or ETA). Throws before begin_epoch.
  void begin_phase(Split split, std::int64_t total_batches);
  // batches_done and items_done count from the phase's start; `current` holds the running
  // values. Cheap: it records, and draws only when a frame or line is due. An update that comes
  // after end_phase (a worker racing the main thread) is dropped.
  // `current` are the values as of batch `batches_done`; a caller that reads them without
  // waiting (the Learner) may pass them a few batches late: the counts shown never go back.
  void update(std::int64_t batches_done, std::int64_t items_done, const MetricValues& current);
  // Counts only, the running values kept: what a loop reports every step while its values are
  // still being computed. As cheap as update().
  void progress(std::int64_t batches_done, std::int64_t items_done);
  // Redraws when a frame is due, with nothing new but the time (elapsed, ETA): called a few
  // times a second from another thread, it keeps the view alive while the loop waits (a long
  // step, a checkpoint being written).
  void tick();
  // What the view shows beside the counts: the process's resident memory and the memory the
  // model's device pool holds, in MiB (the Learner reports them with each reading).
  void set_memory(double resident_mib, double pool_mib);
  // The phase's summary values (epoch means) become the epoch's entries in the history.
  void end_phase(const MetricValues& summary);
  // A line of text shown above the live view (or as its own plain line): early stopping,
  // checkpoints saved, warnings.
  void message(std::string_view text);
  // Returns the outcome with its end time filled in when it was unset, for the report.
  RunOutcome end_run(RunOutcome outcome);

  // Replaces the history: a resumed run restores its earlier epochs, so the charts and the report
  // show the whole run.
  void restore_history(MetricHistory history);
  // A copy of everything recorded so far, for the report or for early stopping.
  MetricHistory history() const;
  // The run as begin_run received it, its start time filled in when it was unset.
  RunInfo run() const;

 private:
  std::chrono::steady_clock::time_point now() const;

  mutable std::mutex mutex_;
  DashboardOptions options_;
  DashboardMode mode_ = DashboardMode::off;
  std::unique_ptr<detail::DashboardState> state_;
  std::unique_ptr<detail::DashboardRenderer> renderer_;
};

}  // namespace kiln::train
