// The live view's block, top to bottom:
//
//   mnist mlp · cpu                                  epoch 3/10 · 0:42 elapsed · ETA 2:10
//   train │██████████████▌                 │  48%  450/938  0:05<0:06  12.3k items/s
//
//   metric          train       valid       best
//   loss            0.2345      0.2511      0.2201 valid @2
//
//   <a chart per metric, side by side as the width allows>
#include <algorithm>
#include <cmath>

#include "kiln/train/dashboard_state.h"
#include "kiln/train/metric_format.h"
#include "kiln/train/terminal_chart.h"
#include "kiln/train/terminal_text.h"

namespace kiln::train::detail {

namespace {

constexpr const char* kSplitColors[] = {"36", "33"};  // train cyan, valid yellow
constexpr int kChartHeight = 8;
constexpr int kMinChartWidth = 36;

std::string header_line(const DashboardState& state, int width, bool color) {
  std::string left = state.run.title.empty() ? std::string("kiln") : state.run.title;
  if (!state.run.device.empty()) left += " · " + state.run.device;
  std::string right = state.epoch_label();
  if (const std::optional<std::int64_t> step = state.train_step()) right += " · step " + std::to_string(*step);
  if (state.resident_mib)
    right += concat({" · mem ", std::to_string(std::llround(*state.resident_mib)), " MiB (pool ",
                     std::to_string(std::llround(state.pool_mib.value_or(0))), ")"});
  right += " · " + format_duration(state.run_seconds()) + " elapsed";
  if (const std::optional<double> eta = state.run_eta_seconds()) right += concat({" · ETA ", format_duration(*eta)});
  if (state.ended) right += " · done";
  const int room = std::max(0, width - display_width(right) - 1);
  return fit_to_width(colored(fit_to_width(left, std::min(room, display_width(left))), "1", color), room) + " " + right;
}

// "│████▌   │": eighths of a cell give the bar a smooth edge.
std::string progress_bar(double fraction, int cells) {
  static constexpr const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const int eighths = static_cast<int>(std::floor(fraction * cells * 8));
  std::string bar = "│";
  int drawn = 0;
  for (; drawn < eighths / 8; ++drawn) bar += "█";
  if (drawn < cells && eighths % 8 > 0) bar += kEighths[eighths % 8], ++drawn;
  for (; drawn < cells; ++drawn) bar += " ";
  return bar + "│";
}

std::string progress_line(const DashboardState& state, int width, bool color) {
  const std::string split =
      colored(std::string(split_name(state.split)), kSplitColors[state.split == Split::valid], color);
  std::string tail;
  const std::optional<double> fraction = state.phase_fraction();
  if (fraction) {
    const std::string percent = std::to_string(static_cast<int>(*fraction * 100)) + "%";
    tail += std::string(static_cast<std::size_t>(std::max(0, 4 - display_width(percent))), ' ') + percent + "  ";
    tail += std::to_string(state.batches_done) + "/" + std::to_string(state.total_batches);
  } else {
    tail += std::to_string(state.batches_done) + " batches";
  }
  const std::optional<double> eta = state.phase_eta_seconds();
  tail += concat({"  ", format_duration(state.phase_seconds()), "<", eta ? format_duration(*eta) : "?", " ETA"});
  if (state.items_done > 0) tail += concat({"  ", format_metric_value(state.items_per_second()), " items/s"});
  if (!state.in_phase) tail += "  done";
  const int cells = std::clamp(width - 6 - 2 - 2 - display_width(tail), 10, 60);
  const std::string bar = fraction ? progress_bar(*fraction, cells) : std::string();
  return fit_to_width(split + " " + colored(bar, "32", color) + (bar.empty() ? "" : "  ") + tail, width);
}

std::vector<std::string> metrics_table(const DashboardState& state, const std::vector<std::string>& names, int width) {
  int name_width = 6;
  for (const std::string& n : names) name_width = std::max(name_width, display_width(n));
  name_width = std::min(name_width + 2, 26);
  std::vector<std::string> lines{fit_to_width(
      fit_to_width("metric", name_width) + fit_to_width("train", 12) + fit_to_width("valid", 12) + "best", width)};
  for (const std::string& name : names) {
    std::string row = fit_to_width(name, name_width);
    for (Split split : kSplits) {
      const std::optional<double> v = state.shown_value(name, split);
      row += fit_to_width(v ? format_metric_value(*v) : "-", 12);
    }
    const Split best_split = state.history.best_split(name);
    if (const std::optional<EpochValue> best = state.history.best_epoch(name, best_split))
      row += format_metric_value(best->value) + " " + std::string(split_name(best_split)) + " @" +
             std::to_string(best->epoch);
    lines.push_back(fit_to_width(row, width));
  }
  return lines;
}

std::vector<ChartCurve> curves_of(const DashboardState& state, const std::string& metric) {
  std::vector<ChartCurve> curves;
  for (Split split : kSplits)
    curves.push_back(
        {std::string(split_name(split)), state.history.curve(metric, split), kSplitColors[split == Split::valid]});
  return curves;
}

// Charts side by side, as many per row as fit at kMinChartWidth; rows that would pass max_lines
// are left out, with a note saying so.
void append_charts(const DashboardState& state, int width, int max_lines, bool color, std::vector<std::string>& lines) {
  std::vector<std::string> charted;
  for (const std::string& name : state.metric_names())
    if (!state.history.curve(name, Split::train).empty() || !state.history.curve(name, Split::valid).empty())
      charted.push_back(name);
  const int per_row = std::max(1, (width + 2) / (kMinChartWidth + 2));
  const int chart_width = (width - 2 * (per_row - 1)) / per_row;
  std::size_t shown = 0;
  while (shown < charted.size() && static_cast<int>(lines.size()) + 1 + kChartHeight + 1 <= max_lines) {
    lines.emplace_back();
    std::vector<std::string> row(kChartHeight);
    for (int column = 0; column < per_row && shown < charted.size(); ++column, ++shown) {
      const std::vector<ChartCurve> curves = curves_of(state, charted[shown]);
      const std::vector<std::string> chart =
          draw_terminal_chart(charted[shown], curves, {chart_width, kChartHeight}, color);
      for (int r = 0; r < kChartHeight; ++r)
        row[static_cast<std::size_t>(r)] += (column > 0 ? "  " : "") + chart[static_cast<std::size_t>(r)];
    }
    for (std::string& line : row) lines.push_back(std::move(line));
  }
  if (shown < charted.size() && static_cast<int>(lines.size()) < max_lines) {
    std::string note = std::to_string(charted.size() - shown);
    note.append(" more charts: enlarge the terminal");
    lines.push_back(fit_to_width(note, width));
  }
}

}  // namespace

std::vector<std::string> live_frame_lines(const DashboardState& state, int width, int max_lines, bool color) {
  std::vector<std::string> lines{header_line(state, width, color)};
  if (state.epoch > 0) lines.push_back(progress_line(state, width, color));
  const std::vector<std::string> names = state.metric_names();
  if (!names.empty()) {
    lines.emplace_back();
    for (std::string& line : metrics_table(state, names, width)) lines.push_back(std::move(line));
  }
  if (static_cast<int>(lines.size()) > max_lines) lines.resize(static_cast<std::size_t>(std::max(max_lines, 1)));
  append_charts(state, width, max_lines, color, lines);
  for (std::string& line : lines) line = fit_to_width(line, width);
  return lines;
}

}  // namespace kiln::train::detail
