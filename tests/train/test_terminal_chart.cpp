// The braille charts of the live dashboard: exact size whatever the data, the y range in the
// labels, dots where the values are, and no failure on one point, flat curves or non-finite values.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/train/terminal_chart.h"
#include "train_test_support.h"

namespace kiln::test {
namespace {

using train::ChartCurve;
using train::MetricPoint;

std::vector<ChartCurve> two_curves(std::vector<MetricPoint> train, std::vector<MetricPoint> valid) {
  return {{"train", std::move(train), "36"}, {"valid", std::move(valid), "33"}};
}

TEST(TerminalChart, EveryLineHasTheRequestedSize) {
  const auto curves = two_curves({{0.1, 2.3}, {0.5, 1.1}, {1.0, 0.7}, {2.0, 0.4}}, {{1, 0.9}, {2, 0.6}});
  for (int width : {16, 30, 57, 120})
    for (int height : {5, 7, 12})
      for (bool color : {false, true}) {
        SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + (color ? " color" : ""));
        const auto lines = train::draw_terminal_chart("loss", curves, {width, height}, color);
        ASSERT_EQ(static_cast<int>(lines.size()), height);
        for (const std::string& line : lines) EXPECT_EQ(columns_of(line), width) << line;
        EXPECT_EQ(color, lines[1].find('\x1b') != std::string::npos);
      }
}

TEST(TerminalChart, LabelsShowTheRangeAndTheLegendNamesTheCurves) {
  const auto lines = train::draw_terminal_chart("loss", two_curves({{0, 2.5}, {1, 0.25}}, {{1, 0.5}}), {40, 7}, false);
  EXPECT_EQ(lines[0].rfind("loss", 0), 0u);
  EXPECT_NE(lines[0].find("train"), std::string::npos);
  EXPECT_NE(lines[0].find("valid"), std::string::npos);
  EXPECT_EQ(lines[1].rfind(" 2.5┤", 0), 0u) << lines[1];  // the max on the top row
  EXPECT_EQ(lines[4].rfind("0.25┤", 0), 0u) << lines[4];  // the min on the bottom row
  EXPECT_NE(lines[6].find("epoch"), std::string::npos);
}

TEST(TerminalChart, DotsLandWhereTheValuesAre) {
  // From the top left to the bottom right: the first plot cell holds the top-left dot (bit 0),
  // the last the bottom-right dot (bit 7).
  const std::vector<ChartCurve> curve{{"train", {{0, 1.0}, {1, 0.0}}, ""}};
  const auto lines = train::draw_terminal_chart("loss", curve, {30, 8}, false);
  const std::vector<unsigned> top = braille_cells(lines[1]), bottom = braille_cells(lines[5]);
  ASSERT_FALSE(top.empty());
  ASSERT_FALSE(bottom.empty());
  EXPECT_TRUE(top.front() & 0x01u);
  EXPECT_TRUE(bottom.back() & 0x80u);
}

TEST(TerminalChart, WithoutColorTheSecondCurveIsDrawnAsMarkers) {
  const auto lines =
      train::draw_terminal_chart("loss", two_curves({{0, 1}, {3, 0}}, {{1, 0.8}, {2, 0.5}, {3, 0.3}}), {40, 8}, false);
  std::string plot;
  for (std::size_t r = 1; r < 6; ++r) plot += lines[r];
  EXPECT_EQ(count_of(plot, "•"), 3);
  EXPECT_FALSE(braille_cells(plot).empty());
}

TEST(TerminalChart, OnePointAFlatCurveAndNonFiniteValuesStillDraw) {
  const auto one = train::draw_terminal_chart("acc", two_curves({}, {{1, 0.5}}), {30, 7}, true);
  EXPECT_EQ(one.size(), 7u);
  std::string plot;
  for (std::size_t r = 1; r < 5; ++r) plot += one[r];
  EXPECT_EQ(braille_cells(plot).size(), 1u);

  const auto flat = train::draw_terminal_chart("lr", two_curves({{0, 0.1}, {1, 0.1}, {2, 0.1}}, {}), {30, 7}, false);
  std::string flat_plot;
  for (std::size_t r = 1; r < 5; ++r) flat_plot += flat[r];
  EXPECT_FALSE(braille_cells(flat_plot).empty());

  const auto gaps = train::draw_terminal_chart(
      "loss", two_curves({{0, 1}, {1, NAN}, {2, INFINITY}, {3, 0.5}}, {{1, -INFINITY}}), {30, 7}, false);
  EXPECT_EQ(gaps.size(), 7u);
  EXPECT_EQ(gaps[1].rfind("  1┤", 0), 0u) << gaps[1];  // the range ignores inf: 1 down to 0.5
  for (const std::string& line : gaps) EXPECT_EQ(line.find("nan"), std::string::npos);

  const auto none = train::draw_terminal_chart("loss", two_curves({{0, NAN}}, {}), {30, 7}, false);
  std::string all;
  for (const std::string& line : none) all += line;
  EXPECT_NE(all.find("no finite values"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
