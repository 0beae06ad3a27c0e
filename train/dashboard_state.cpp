#include "kiln/train/dashboard_state.h"

#include <algorithm>
#include <cmath>

#include "kiln/train/metric_format.h"
#include "kiln/train/terminal_text.h"

namespace kiln::train::detail {

namespace {

double seconds_between(DashboardState::TimePoint from, DashboardState::TimePoint to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

}  // namespace

double DashboardState::run_seconds() const { return seconds_between(run_start, now); }

double DashboardState::phase_seconds() const { return seconds_between(phase_start, in_phase ? now : phase_end); }

double DashboardState::items_per_second() const {
  const double seconds = phase_seconds();
  return seconds > 0 ? static_cast<double>(items_done) / seconds : 0;
}

std::optional<double> DashboardState::phase_fraction() const {
  if (total_batches <= 0) return std::nullopt;
  return std::clamp(static_cast<double>(batches_done) / static_cast<double>(total_batches), 0.0, 1.0);
}

std::optional<double> DashboardState::phase_eta_seconds() const {
  const std::optional<double> fraction = phase_fraction();
  if (!fraction || *fraction <= 0) return std::nullopt;
  return phase_seconds() * (1 - *fraction) / *fraction;
}

std::optional<double> DashboardState::run_eta_seconds() const {
  if (finished_epochs == 0 || epochs <= 0 || epoch <= 0 || ended) return std::nullopt;
  const double per_epoch = finished_epochs_seconds / finished_epochs;
  const double in_this_epoch = seconds_between(epoch_start, now);
  return std::max(0.0, per_epoch * (epochs - epoch + 1) - in_this_epoch);
}

std::optional<std::int64_t> DashboardState::train_step() const {
  if (!in_phase || split != Split::train || total_batches <= 0 || epoch < 1) return std::nullopt;
  return (epoch - 1) * total_batches + batches_done;
}

std::string DashboardState::epoch_label() const {
  if (epoch == 0) return "starting";
  std::string label = concat({"epoch ", std::to_string(epoch)});
  if (epochs > 0) label += concat({"/", std::to_string(epochs)});
  return label;
}

std::vector<std::string> DashboardState::metric_names() const {
  std::vector<std::string> names;
  for (const MetricValue& m : current) names.push_back(m.name);
  for (std::string& name : history.metrics())
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  return names;
}

std::optional<double> DashboardState::shown_value(const std::string& metric, Split which) const {
  if (in_phase && split == which)
    for (const MetricValue& m : current)
      if (m.name == metric) return m.value;
  if (const std::optional<EpochValue> last = history.last_epoch(metric, which)) return last->value;
  const std::span<const MetricPoint> points = history.points(metric, which);
  if (!points.empty()) return points.back().value;
  return std::nullopt;
}

std::vector<std::string> run_header_lines(const DashboardState& state) {
  std::string first = concat({"run ", state.run.title.empty() ? "(untitled)" : state.run.title});
  if (!state.run.device.empty()) first += concat({" on ", state.run.device});
  std::vector<std::string> lines{first};
  if (!state.run.settings.empty()) {
    std::string settings = "settings:";
    for (const auto& [key, value] : state.run.settings) settings += concat({" ", key, "=", value});
    lines.push_back(std::move(settings));
  }
  return lines;
}

std::string phase_summary_line(const DashboardState& state, const MetricValues& summary) {
  std::string line = state.epoch_label() + " " + std::string(split_name(state.split));
  for (const MetricValue& m : summary) {
    line += concat({"  ", m.name, " ", format_metric_value(m.value)});
    const std::optional<EpochValue> best = state.history.best_epoch(m.name, state.split);
    // Marked on the split that decides the best epoch (valid when there is one), from epoch 2 on.
    if (best && best->epoch == state.epoch && state.split == state.history.best_split(m.name) &&
        state.history.epochs(m.name, state.split).size() > 1)
      line += " (best)";
  }
  line += concat({"  [", std::to_string(state.batches_done), " batches in ", format_duration(state.phase_seconds())});
  if (state.items_done > 0) line += concat({", ", format_metric_value(state.items_per_second()), " items/s"});
  return line + "]";
}

std::vector<std::string> run_summary_lines(const DashboardState& state, const RunOutcome& outcome) {
  std::vector<std::string> lines;
  std::string first = concat({"run ", outcome.status.empty() ? "ended" : outcome.status, " after ",
                              std::to_string(state.finished_epochs), state.finished_epochs == 1 ? " epoch" : " epochs",
                              " in ", format_duration(state.run_seconds())});
  lines.push_back(std::move(first));
  std::string best = "best:";
  for (const std::string& metric : state.history.metrics()) {
    const Split split = state.history.best_split(metric);
    if (const std::optional<EpochValue> b = state.history.best_epoch(metric, split))
      best += concat({" ", split_name(split), " ", metric, " ", format_metric_value(b->value), " (epoch ",
                      std::to_string(b->epoch), "),"});
  }
  if (best.back() == ',') lines.push_back(best.substr(0, best.size() - 1));
  if (!outcome.final_metrics.empty()) {
    std::string final_line = "final:";
    for (const MetricValue& m : outcome.final_metrics)
      final_line += concat({" ", m.name, " ", format_metric_value(m.value)});
    lines.push_back(std::move(final_line));
  }
  return lines;
}

}  // namespace kiln::train::detail
