// One metric's chart in the report, as inline SVG: the plot area, "nice" ticks (1, 2 or 5 times
// a power of ten) on both axes with light grid lines, the train and valid curves as polylines
// (non-finite values skipped, long curves thinned to kMaxPolylinePoints), point markers with
// hover titles on short curves, the best epoch ringed, and a legend. Numbers are written with a
// fixed number of decimals so the same history always gives the same bytes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/train/html_report_markup.h"
#include "kiln/train/metric_format.h"
#include "kiln/train/terminal_text.h"

namespace kiln::train::detail {

namespace {

constexpr double kWidth = 640, kHeight = 300;
constexpr double kLeft = 64, kRight = 620, kTop = 40, kBottom = 252;  // the plot area
constexpr std::size_t kMaxPolylinePoints = 2000;
constexpr std::size_t kMaxMarkedPoints = 60;
constexpr const char* kSplitColors[] = {"#1f77b4", "#ff7f0e"};  // train blue, valid orange

struct Range {
  double lo = 0, hi = 1;
};

double nice_step(double span, int target_ticks) {
  const double raw = span / target_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

std::vector<double> ticks_of(Range r, double step) {
  std::vector<double> ticks;
  for (double t = std::ceil(r.lo / step - 1e-9) * step; t <= r.hi + step * 1e-9 && ticks.size() < 50; t += step)
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string num(double v) { return format_fixed(v, 2); }

struct Plot {
  Range x, y;
  double to_x(double v) const { return kLeft + (v - x.lo) / (x.hi - x.lo) * (kRight - kLeft); }
  double to_y(double v) const { return kBottom - (v - y.lo) / (y.hi - y.lo) * (kBottom - kTop); }
};

// The curves' finite points, per split.
struct Curves {
  std::vector<MetricPoint> finite[2];
  std::size_t skipped = 0;
  bool from_epochs[2] = {false, false};
};

Curves curves_of(const MetricHistory& history, const std::string& metric) {
  Curves c;
  for (Split split : kSplits) {
    const std::size_t s = split == Split::train ? 0 : 1;
    c.from_epochs[s] = history.points(metric, split).empty();
    for (const MetricPoint& p : history.curve(metric, split)) {
      if (std::isfinite(p.value))
        c.finite[s].push_back(p);
      else
        ++c.skipped;
    }
  }
  return c;
}

// The y range rounded out to whole ticks; a flat curve or a single value gets room around it.
Plot plot_for(const Curves& c, double* y_step, double* x_step) {
  double y_lo = INFINITY, y_hi = -INFINITY, x_lo = 0, x_hi = 0;
  for (const auto& points : c.finite)
    for (const MetricPoint& p : points)
      y_lo = std::min(y_lo, p.value), y_hi = std::max(y_hi, p.value), x_lo = std::min(x_lo, p.x),
      x_hi = std::max(x_hi, p.x);
  if (y_lo > y_hi) y_lo = 0, y_hi = 1;
  if (y_lo == y_hi) {
    const double pad = y_lo == 0 ? 1 : std::fabs(y_lo) * 0.1;
    y_lo -= pad, y_hi += pad;
  }
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  *y_step = nice_step(y_hi - y_lo, 5);
  *x_step = nice_step(x_hi - x_lo, 8);
  return {{x_lo, x_hi}, {std::floor(y_lo / *y_step) * *y_step, std::ceil(y_hi / *y_step) * *y_step}};
}

void append_axes(std::string& svg, const Plot& plot, double y_step, double x_step, const std::string& metric) {
  svg += "<g class=\"grid\" stroke=\"#e5e5e5\" stroke-width=\"1\">\n";
  for (double t : ticks_of(plot.y, y_step))
    svg += concat({"<line x1=\"", num(kLeft), "\" y1=\"", num(plot.to_y(t)), "\" x2=\"", num(kRight), "\" y2=\"",
                   num(plot.to_y(t)), "\" />\n"});
  svg += "</g>\n<g class=\"axes\" fill=\"#555\" font-size=\"11\" font-family=\"sans-serif\">\n";
  svg += concat({"<line x1=\"", num(kLeft), "\" y1=\"", num(kBottom), "\" x2=\"", num(kRight), "\" y2=\"", num(kBottom),
                 "\" stroke=\"#888\" />\n<line x1=\"", num(kLeft), "\" y1=\"", num(kTop), "\" x2=\"", num(kLeft),
                 "\" y2=\"", num(kBottom), "\" stroke=\"#888\" />\n"});
  for (double t : ticks_of(plot.y, y_step))
    svg += concat({"<text x=\"", num(kLeft - 6), "\" y=\"", num(plot.to_y(t) + 4), "\" text-anchor=\"end\">",
                   escape_markup(format_metric_value(t)), "</text>\n"});
  for (double t : ticks_of(plot.x, x_step))
    svg +=
        concat({"<line x1=\"", num(plot.to_x(t)), "\" y1=\"", num(kBottom), "\" x2=\"", num(plot.to_x(t)), "\" y2=\"",
                num(kBottom + 4), "\" stroke=\"#888\" />\n<text x=\"", num(plot.to_x(t)), "\" y=\"", num(kBottom + 17),
                "\" text-anchor=\"middle\">", escape_markup(format_metric_value(t)), "</text>\n"});
  svg += concat({"<text x=\"", num((kLeft + kRight) / 2), "\" y=\"", num(kHeight - 12),
                 "\" text-anchor=\"middle\">epoch</text>\n<text x=\"16\" y=\"", num((kTop + kBottom) / 2),
                 "\" text-anchor=\"middle\" transform=\"rotate(-90 16 ", num((kTop + kBottom) / 2), ")\">",
                 escape_markup(metric), "</text>\n</g>\n"});
}

// A polyline of at most kMaxPolylinePoints points, evenly chosen, the first and last kept.
void append_curve(std::string& svg, const Plot& plot, const std::vector<MetricPoint>& points, Split split,
                  bool from_epochs, const std::string& metric) {
  if (points.empty()) return;
  const std::size_t s = split == Split::train ? 0 : 1, n = points.size();
  const std::size_t drawn = std::min(n, kMaxPolylinePoints);
  const std::string label = escape_markup(concat({split_name(split), " ", metric}));
  std::string coordinates;
  for (std::size_t i = 0; i < drawn; ++i) {
    const MetricPoint& p = points[drawn == n ? i : i * (n - 1) / (drawn - 1)];
    coordinates += concat({i ? " " : "", num(plot.to_x(p.x)), ",", num(plot.to_y(p.value))});
  }
  svg += concat({"<polyline class=\"curve\" data-split=\"", split_name(split), "\" data-points=\"",
                 std::to_string(drawn), "\" fill=\"none\" stroke=\"", kSplitColors[s],
                 "\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"", coordinates, "\"><title>", label, ": ",
                 std::to_string(n), n == 1 ? " point" : " points", ", last ", format_metric_value(points.back().value),
                 "</title></polyline>\n"});
  if (n > kMaxMarkedPoints) return;
  svg += concat({"<g class=\"markers\" data-split=\"", split_name(split), "\" fill=\"", kSplitColors[s], "\">\n"});
  for (const MetricPoint& p : points)
    svg += concat({"<circle cx=\"", num(plot.to_x(p.x)), "\" cy=\"", num(plot.to_y(p.value)), "\" r=\"3\"><title>",
                   label, from_epochs ? ", epoch " : " at epoch ", format_metric_value(p.x), ": ",
                   format_metric_value(p.value), "</title></circle>\n"});
  svg += "</g>\n";
}

void append_legend(std::string& svg, const Curves& c) {
  double x = kRight - 150;
  svg += "<g class=\"legend\" font-size=\"12\" font-family=\"sans-serif\" fill=\"#333\">\n";
  for (Split split : kSplits) {
    const std::size_t s = split == Split::train ? 0 : 1;
    if (c.finite[s].empty()) continue;
    svg +=
        concat({"<line x1=\"", num(x), "\" y1=\"20\" x2=\"", num(x + 22), "\" y2=\"20\" stroke=\"", kSplitColors[s],
                "\" stroke-width=\"3\" />\n<text x=\"", num(x + 28), "\" y=\"24\">", split_name(split), "</text>\n"});
    x += 75;
  }
  svg += "</g>\n";
}

std::string caption_of(const MetricHistory& history, const std::string& metric, const Curves& c) {
  const Better better = history.better(metric);
  std::string caption = better == Better::lower    ? "lower is better"
                        : better == Better::higher ? "higher is better"
                                                   : "";
  const Split split = history.best_split(metric);
  if (const std::optional<EpochValue> best = history.best_epoch(metric, split))
    caption += concat({"; best ", split_name(split), " ", format_metric_value(best->value), " at epoch ",
                       std::to_string(best->epoch)});
  if (c.skipped > 0)
    caption += concat(
        {caption.empty() ? "" : "; ", std::to_string(c.skipped),
         c.skipped == 1 ? " non-finite value (NaN or inf) not drawn" : " non-finite values (NaN or inf) not drawn"});
  if (c.finite[0].empty() && c.finite[1].empty()) caption += concat({caption.empty() ? "" : "; ", "no finite values"});
  return caption;
}

}  // namespace

std::string svg_metric_figure(const MetricHistory& history, const std::string& metric, int index) {
  const Curves c = curves_of(history, metric);
  double y_step = 1, x_step = 1;
  const Plot plot = plot_for(c, &y_step, &x_step);
  const std::string name = escape_markup(metric);
  std::string svg = concat({"<figure class=\"chart\" id=\"metric-", std::to_string(index), "\" data-metric=\"", name,
                            "\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ", num(kWidth), " ",
                            num(kHeight), "\" role=\"img\" aria-label=\"", name, "\">\n<title>", name, "</title>\n"});
  svg += concat({"<text x=\"", num(kLeft),
                 "\" y=\"24\" font-size=\"15\" font-weight=\"bold\" font-family=\"sans-serif\">", name, "</text>\n"});
  append_axes(svg, plot, y_step, x_step, metric);
  for (Split split : kSplits) {
    const std::size_t s = split == Split::train ? 0 : 1;
    append_curve(svg, plot, c.finite[s], split, c.from_epochs[s], metric);
  }
  const Split best_split = history.best_split(metric);
  if (const std::optional<EpochValue> best = history.best_epoch(metric, best_split))
    svg += concat({"<circle class=\"best\" cx=\"", num(plot.to_x(best->epoch)), "\" cy=\"", num(plot.to_y(best->value)),
                   "\" r=\"7\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2\"><title>best ",
                   split_name(best_split), " ", name, ": ", format_metric_value(best->value), " (epoch ",
                   std::to_string(best->epoch), ")</title></circle>\n"});
  append_legend(svg, c);
  svg += concat({"</svg>\n<figcaption>", escape_markup(caption_of(history, metric, c)), "</figcaption>\n</figure>\n"});
  return svg;
}

}  // namespace kiln::train::detail
