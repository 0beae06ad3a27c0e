// The plain view, for files, pipes and CI logs: whole lines only, no escape codes. A line when
// the run starts, at most one progress line per interval within a phase (so a long epoch still
// shows it is alive), a line per phase with its summary, and the run's result.
#include <ostream>

#include "kiln/train/dashboard_state.h"
#include "kiln/train/metric_format.h"
#include "kiln/train/terminal_text.h"

namespace kiln::train::detail {

namespace {

class PlainView : public DashboardRenderer {
 public:
  PlainView(std::ostream& out, const ViewOptions& options) : out_(out), interval_(options.interval) {}

  void run_began(const DashboardState& state) override { write(run_header_lines(state)); }

  void phase_began(const DashboardState& state) override { last_line_ = state.now; }

  void progressed(const DashboardState& state) override {
    if (state.now - last_line_ < interval_) return;
    last_line_ = state.now;
    std::string line =
        concat({state.epoch_label(), " ", split_name(state.split), " ", std::to_string(state.batches_done)});
    if (const std::optional<double> fraction = state.phase_fraction())
      line += concat(
          {"/", std::to_string(state.total_batches), " (", std::to_string(static_cast<int>(*fraction * 100)), "%)"});
    line += concat({" ", format_duration(state.phase_seconds())});
    if (const std::optional<double> eta = state.phase_eta_seconds()) line += concat({", ETA ", format_duration(*eta)});
    if (state.items_done > 0) line += concat({", ", format_metric_value(state.items_per_second()), " items/s"});
    for (const MetricValue& m : state.current) line += concat({"  ", m.name, " ", format_metric_value(m.value)});
    write({line});
  }

  void phase_ended(const DashboardState& state, const MetricValues& summary) override {
    write({phase_summary_line(state, summary)});
  }

  void message(const DashboardState&, std::string_view text) override { write({std::string(text)}); }

  void run_ended(const DashboardState& state, const RunOutcome& outcome) override {
    write(run_summary_lines(state, outcome));
  }

 private:
  void write(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    out_ << text;
    out_.flush();
  }

  std::ostream& out_;
  std::chrono::milliseconds interval_;
  DashboardState::TimePoint last_line_{};
};

}  // namespace

std::unique_ptr<DashboardRenderer> make_plain_view(std::ostream& out, const ViewOptions& options) {
  return std::make_unique<PlainView>(out, options);
}

}  // namespace kiln::train::detail
