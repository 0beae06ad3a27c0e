#include "kiln/train/terminal_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "kiln/train/metric_format.h"
#include "kiln/train/terminal_text.h"

namespace kiln::train {

namespace {

struct Range {
  double lo = 0, hi = 0;
};

// The data's range, widened where it is empty so a single point or a flat curve lands mid-chart.
Range y_range_of(std::span<const ChartCurve> curves, bool* any) {
  Range r{INFINITY, -INFINITY};
  for (const ChartCurve& c : curves)
    for (const MetricPoint& p : c.points)
      if (std::isfinite(p.value)) r = {std::min(r.lo, p.value), std::max(r.hi, p.value)};
  *any = r.lo <= r.hi;
  if (!*any) return {0, 1};
  if (r.lo == r.hi) {
    const double pad = r.lo == 0 ? 1 : std::fabs(r.lo) * 0.05;
    r = {r.lo - pad, r.hi + pad};
  }
  return r;
}

Range x_range_of(std::span<const ChartCurve> curves) {
  Range r{0, 0};  // epochs start at 0
  for (const ChartCurve& c : curves)
    for (const MetricPoint& p : c.points)
      if (std::isfinite(p.value)) r = {std::min(r.lo, p.x), std::max(r.hi, p.x)};
  if (r.hi <= r.lo) r.hi = r.lo + 1;
  return r;
}

// The canvas: per cell, its braille dots, the curve that drew last (for its color) and a marker.
class BrailleCanvas {
 public:
  BrailleCanvas(int columns, int rows)
      : columns_(columns), rows_(rows), cells_(static_cast<std::size_t>(columns * rows)) {}
  int dot_columns() const { return columns_ * 2; }
  int dot_rows() const { return rows_ * 4; }

  void dot(int x, int y, int curve) {
    if (x < 0 || y < 0 || x >= dot_columns() || y >= dot_rows()) return;
    // Braille dot numbering: the left column is bits 0,1,2,6 from the top, the right 3,4,5,7.
    static constexpr std::uint8_t kBits[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};
    Cell& c = cell(x / 2, y / 4);
    c.bits |= kBits[x % 2][y % 4];
    c.curve = curve;
  }
  void line(int x0, int y0, int x1, int y1, int curve) {  // Bresenham
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    for (int err = dx + dy;;) {
      dot(x0, y0, curve);
      if (x0 == x1 && y0 == y1) return;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  void marker(int x, int y, int curve) {
    if (x < 0 || y < 0 || x >= dot_columns() || y >= dot_rows()) return;
    Cell& c = cell(x / 2, y / 4);
    c.marker = true;
    c.curve = curve;
  }
  // One row of cells as text, each cell colored by the curve that drew it last.
  std::string row(int r, std::span<const ChartCurve> curves, bool color) const {
    std::string out;
    for (int column = 0; column < columns_; ++column) {
      const Cell& c = cells_[static_cast<std::size_t>(r * columns_ + column)];
      if (!c.marker && c.bits == 0) {
        out += ' ';
        continue;
      }
      std::string glyph = "•";
      if (!c.marker) {
        const char32_t code = 0x2800 + c.bits;  // U+2800..U+28FF, three bytes in UTF-8
        glyph = {static_cast<char>(0xE0 | (code >> 12)), static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
                 static_cast<char>(0x80 | (code & 0x3F))};
      }
      out += detail::colored(glyph, curves[static_cast<std::size_t>(c.curve)].color, color);
    }
    return out;
  }

 private:
  struct Cell {
    std::uint8_t bits = 0;
    bool marker = false;
    int curve = 0;
  };
  Cell& cell(int column, int row) { return cells_[static_cast<std::size_t>(row * columns_ + column)]; }
  int columns_, rows_;
  std::vector<Cell> cells_;
};

std::string legend(std::span<const ChartCurve> curves, bool color) {
  std::string out;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    if (curves[i].points.empty()) continue;
    const bool as_markers = !color && i > 0;
    out += ' ';
    out += detail::colored(as_markers ? "•" : "⠒⠒", curves[i].color, color);
    out += ' ' + curves[i].label;
  }
  return out;
}

}  // namespace

std::vector<std::string> draw_terminal_chart(std::string_view title, std::span<const ChartCurve> curves,
                                             TerminalChartSize size, bool color) {
  const int width = std::max(size.width, 16), height = std::max(size.height, 5);
  bool any_finite = false;
  const Range y = y_range_of(curves, &any_finite);
  const Range x = x_range_of(curves);
  const std::string top = any_finite ? format_metric_value(y.hi) : "",
                    bottom = any_finite ? format_metric_value(y.lo) : "";
  const int label_width = std::max(detail::display_width(top), detail::display_width(bottom));
  const int columns = width - label_width - 1, rows = height - 3;

  BrailleCanvas canvas(columns, rows);
  auto to_dot_x = [&](double v) {
    return static_cast<int>(std::lround((v - x.lo) / (x.hi - x.lo) * (canvas.dot_columns() - 1)));
  };
  auto to_dot_y = [&](double v) {
    return static_cast<int>(std::lround((y.hi - v) / (y.hi - y.lo) * (canvas.dot_rows() - 1)));
  };
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const bool as_markers = !color && i > 0;
    bool have_previous = false;
    int px = 0, py = 0;
    for (const MetricPoint& p : curves[i].points) {
      if (!std::isfinite(p.value) || !std::isfinite(p.x)) continue;  // a gap is bridged, not drawn
      const int dx = to_dot_x(p.x), dy = to_dot_y(p.value);
      if (as_markers)
        canvas.marker(dx, dy, static_cast<int>(i));
      else if (have_previous)
        canvas.line(px, py, dx, dy, static_cast<int>(i));
      else
        canvas.dot(dx, dy, static_cast<int>(i));
      have_previous = true, px = dx, py = dy;
    }
  }

  std::vector<std::string> lines;
  std::string legend_text = legend(curves, color);
  if (detail::display_width(legend_text) > width - 6) legend_text.clear();  // a narrow chart keeps its title
  const int title_width = std::max(0, width - detail::display_width(legend_text));
  lines.push_back(detail::fit_to_width(detail::colored(title, "1", color), title_width) + legend_text);
  for (int r = 0; r < rows; ++r) {
    const std::string label = r == 0 ? top : r == rows - 1 ? bottom : "";
    std::string line(static_cast<std::size_t>(label_width - detail::display_width(label)), ' ');
    line += label;
    line += label.empty() ? "│" : "┤";
    if (!any_finite && r == rows / 2)
      line += detail::fit_to_width("  no finite values yet", columns);
    else
      line += canvas.row(r, curves, color);
    lines.push_back(std::move(line));
  }
  std::string axis(static_cast<std::size_t>(label_width), ' ');
  axis += "└";
  for (int c = 0; c < columns; ++c) axis += "─";
  lines.push_back(std::move(axis));
  const std::string x_lo = format_metric_value(x.lo), x_hi = format_metric_value(x.hi);
  std::string x_labels = x_lo;
  const int gap = columns - detail::display_width(x_lo) - detail::display_width(x_hi);
  const int before = (gap - 5) / 2;
  if (gap >= 7)
    x_labels += std::string(static_cast<std::size_t>(before), ' ') + "epoch" +
                std::string(static_cast<std::size_t>(gap - 5 - before), ' ');
  else
    x_labels += std::string(static_cast<std::size_t>(std::max(gap, 1)), ' ');
  x_labels += x_hi;
  lines.push_back(detail::fit_to_width(std::string(static_cast<std::size_t>(label_width + 1), ' ') + x_labels, width));
  return lines;
}

}  // namespace kiln::train
