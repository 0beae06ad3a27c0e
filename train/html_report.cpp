// The report's document. It is written as XHTML-compatible HTML5 — every element closed, every
// attribute quoted, only XML's own entities — so an XML parser reads it as well as a browser,
// and tests can check that it is well-formed.
#include "kiln/train/html_report.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "kiln/io/atomic_file.h"
#include "kiln/base/error.h"
#include "kiln/train/html_report_markup.h"
#include "kiln/train/metric_format.h"
#include "kiln/train/terminal_text.h"

namespace kiln::train {

namespace {

using detail::concat;
using detail::escape_markup;

constexpr const char* kStyle =
    R"(body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1360px; padding: 0 1rem;
       color: #222; background: #fff; }
h1 { margin-bottom: 0.2rem; }
.status { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { text-align: left; padding: 0.25rem 0.9rem 0.25rem 0; border-bottom: 1px solid #e5e5e5; }
td.number { font-variant-numeric: tabular-nums; text-align: right; }
td.best { font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; }
figure.chart { margin: 0; flex: 1 1 560px; max-width: 660px; }
figure.chart svg { width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.9rem; }
footer { color: #888; font-size: 0.8rem; margin-top: 2rem; }
@media (prefers-color-scheme: dark) {
  body { color: #ddd; background: #161616; }
  .status, figcaption { color: #aaa; }
  th, td { border-bottom-color: #333; }
  svg .grid { stroke: #333; }
  svg .axes, svg .legend, svg text { fill: #bbb; }
}
)";

constexpr const char* kDash = "&#8212;";  // an em dash: no value

bool is_set(std::chrono::system_clock::time_point t) { return t != std::chrono::system_clock::time_point{}; }

int epochs_run(const MetricHistory& history) {
  int epochs = 0;
  for (const std::string& metric : history.metrics())
    for (Split split : kSplits)
      for (const EpochValue& e : history.epochs(metric, split)) epochs = std::max(epochs, e.epoch);
  return epochs;
}

std::string row(std::string_view key, std::string_view escaped_value) {
  return concat({"<tr><th>", escape_markup(key), "</th><td>", escaped_value, "</td></tr>\n"});
}

std::string run_table(const RunInfo& run, const RunOutcome& outcome, const MetricHistory& history) {
  std::string rows;
  rows += row("status", escape_markup(outcome.status.empty() ? "ended" : outcome.status));
  if (!run.device.empty()) rows += row("device", escape_markup(run.device));
  rows += row("epochs", std::to_string(epochs_run(history)));
  if (is_set(run.started)) rows += row("started", format_utc_time(run.started));
  if (is_set(outcome.ended)) rows += row("ended", format_utc_time(outcome.ended));
  if (is_set(run.started) && is_set(outcome.ended))
    rows += row("duration", format_duration(std::chrono::duration<double>(outcome.ended - run.started).count()));
  return concat({"<section id=\"run\">\n<h2>Run</h2>\n<table>\n<tbody>\n", rows, "</tbody>\n</table>\n</section>\n"});
}

std::string settings_table(const RunInfo& run) {
  if (run.settings.empty()) return {};
  std::string rows;
  for (const auto& [key, value] : run.settings) rows += row(key, escape_markup(value));
  return concat(
      {"<section id=\"settings\">\n<h2>Settings</h2>\n<table>\n<tbody>\n", rows, "</tbody>\n</table>\n</section>\n"});
}

std::string number_cell(std::optional<double> value, bool best = false) {
  if (!value) return concat({"<td class=\"number\">", kDash, "</td>"});
  return concat(
      {"<td class=\"number", best ? " best" : "", "\">", escape_markup(format_metric_value(*value)), "</td>"});
}

// The value a table shows for a split: its last epoch summary, or its last point without one.
std::optional<double> final_value(const MetricHistory& history, const std::string& metric, Split split) {
  if (const std::optional<EpochValue> last = history.last_epoch(metric, split)) return last->value;
  const std::span<const MetricPoint> points = history.points(metric, split);
  if (!points.empty()) return points.back().value;
  return std::nullopt;
}

// One row per metric: its last train and valid values, the final metrics (a test set) when the
// run has any, and its best epoch; a last value that is also the best is in bold.
std::string metrics_table(const RunOutcome& outcome, const MetricHistory& history) {
  std::vector<std::string> names = history.metrics();
  for (const MetricValue& m : outcome.final_metrics)
    if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
  if (names.empty()) return {};
  const bool with_final = !outcome.final_metrics.empty();
  std::string html =
      concat({"<section id=\"metrics\">\n<h2>Final metrics</h2>\n<table class=\"metrics\">\n<thead><tr><th>metric</th>"
              "<th>train</th><th>valid</th>",
              with_final ? "<th>final</th>" : "", "<th>best</th></tr></thead>\n<tbody>\n"});
  for (const std::string& name : names) {
    const Split best_split = history.best_split(name);
    const std::optional<EpochValue> best = history.best_epoch(name, best_split);
    html += concat({"<tr data-metric=\"", escape_markup(name), "\"><th>", escape_markup(name), "</th>"});
    for (Split split : kSplits) {
      const std::optional<EpochValue> last = history.last_epoch(name, split);
      const bool last_is_best = best && split == best_split && last && last->epoch == best->epoch;
      html += number_cell(final_value(history, name, split), last_is_best);
    }
    if (with_final) {
      std::optional<double> final_metric;
      for (const MetricValue& m : outcome.final_metrics)
        if (m.name == name) final_metric = m.value;
      html += number_cell(final_metric);
    }
    if (best)
      html += concat({"<td class=\"best-epoch\" data-epoch=\"", std::to_string(best->epoch), "\">",
                      escape_markup(format_metric_value(best->value)), " (", split_name(best_split), ", epoch ",
                      std::to_string(best->epoch), ")</td>"});
    else
      html += concat({"<td>", kDash, "</td>"});
    html += "</tr>\n";
  }
  return html + "</tbody>\n</table>\n</section>\n";
}

std::string charts(const MetricHistory& history) {
  const std::vector<std::string> names = history.metrics();
  if (names.empty()) return {};
  std::string html = "<section id=\"curves\">\n<h2>Curves</h2>\n<div class=\"charts\">\n";
  for (std::size_t i = 0; i < names.size(); ++i)
    html += detail::svg_metric_figure(history, names[i], static_cast<int>(i));
  return html + "</div>\n</section>\n";
}

}  // namespace

std::string html_report(const RunInfo& run, const RunOutcome& outcome, const MetricHistory& history) {
  const std::string title = escape_markup(run.title.empty() ? "training run" : run.title);
  std::string html =
      concat({"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n"
              "<meta name=\"generator\" content=\"kiln\" />\n<title>",
              title, " &#183; kiln report</title>\n<style>\n", kStyle, "</style>\n</head>\n<body>\n"});
  std::string status = escape_markup(outcome.status.empty() ? "ended" : outcome.status);
  if (!run.device.empty()) status += concat({" on ", escape_markup(run.device)});
  if (is_set(run.started) && is_set(outcome.ended))
    status += concat({" in ", format_duration(std::chrono::duration<double>(outcome.ended - run.started).count())});
  html += concat({"<header>\n<h1>", title, "</h1>\n<p class=\"status\">", status, "</p>\n</header>\n"});
  html += run_table(run, outcome, history);
  html += settings_table(run);
  html += metrics_table(outcome, history);
  html += charts(history);
  html += "<footer>Written by kiln. Hover a point or a curve for its values.</footer>\n</body>\n</html>\n";
  return html;
}

void write_html_report(const std::filesystem::path& path, const RunInfo& run, const RunOutcome& outcome,
                       const MetricHistory& history) {
  const std::string html = html_report(run, outcome, history);  // built first: a failure here leaves no file
  io::detail::AtomicFile file(path, "write_html_report");
  file.write(std::as_bytes(std::span(html.data(), html.size())));
  file.commit();
}

}  // namespace kiln::train
