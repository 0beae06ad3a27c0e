// A metric's curves drawn with text, for the live dashboard: braille characters give each cell
// 2x4 dots, so a 40x5 chart has an 80x20 dot canvas. Axis labels show the y range (max on the top
// row, min on the bottom) and the x range; a legend names each curve.
//
//   loss                    ⠒⠒ train ⠒⠒ valid
//   2.303 ┤⠑⢄
//         │  ⠑⠢⢄⣀
//   0.105 ┤      ⠉⠉⠒⠒⠤⠤⣀⣀⣀
//         └──────────────────────────────
//          0         epoch             3
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/train/metric_history.h"

namespace kiln::train {

struct ChartCurve {
  std::string label{};
  std::vector<MetricPoint> points{};
  std::string color{};  // an ANSI SGR code ("36" cyan); used when color is on
};

struct TerminalChartSize {
  int width = 40;  // columns, labels included; at least 16
  int height = 7;  // lines: the title, height - 3 rows of plot, the axis, its labels; at least 5
};

// Exactly size.height lines of exactly size.width columns (escape sequences aside). Non-finite
// values are skipped; a single point or a flat curve still draws. Without color, curves after the
// first are drawn as '•' markers at their points so train and valid stay apart.
std::vector<std::string> draw_terminal_chart(std::string_view title, std::span<const ChartCurve> curves,
                                             TerminalChartSize size, bool color);

}  // namespace kiln::train
