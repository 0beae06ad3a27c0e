// MetricHistory: what it records, which way each metric improves, the best epoch (non-finite
// values never win), and the errors for bad input; the number and time formats both views share.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "kiln/base/error.h"
#include "kiln/train/metric_format.h"
#include "kiln/train/metric_history.h"
#include "kiln/train/metric_history_file.h"
#include "support/scratch_dir.h"

namespace kiln::test {
namespace {

using train::Better;
using train::MetricHistory;
using train::Split;
using train::load_history;
using train::save_history;

TEST(MetricHistory, DirectionFollowsTheName) {
  EXPECT_EQ(train::better_by_name("loss"), Better::lower);
  EXPECT_EQ(train::better_by_name("Val_Loss"), Better::lower);
  EXPECT_EQ(train::better_by_name("perplexity"), Better::lower);
  EXPECT_EQ(train::better_by_name("accuracy"), Better::higher);
  EXPECT_EQ(train::better_by_name("top5_accuracy"), Better::higher);
  EXPECT_EQ(train::better_by_name("f1"), Better::higher);
  EXPECT_EQ(train::better_by_name("learning rate"), Better::neither);
  EXPECT_EQ(train::better_by_name("items/s"), Better::neither);
  EXPECT_EQ(train::better_by_name("memory"), Better::neither);
}

TEST(MetricHistory, SetBetterOverridesWithoutRecordingAMetric) {
  MetricHistory h;
  h.set_better("score", Better::higher);
  EXPECT_EQ(h.better("score"), Better::higher);
  EXPECT_TRUE(h.empty());
  EXPECT_FALSE(h.contains("score"));
  h.set_better("score", Better::lower);
  EXPECT_EQ(h.better("score"), Better::lower);
}

TEST(MetricHistory, RecordsPointsAndEpochsPerSplitInOrder) {
  MetricHistory h;
  h.record_point("loss", Split::train, 0.5, 0.9);
  h.record_point("loss", Split::train, 1.0, 0.7);
  h.record_epoch("loss", Split::train, 1, 0.8);
  h.record_epoch("accuracy", Split::valid, 1, 0.6);
  h.record_epoch("loss", Split::valid, 1, 0.75);
  EXPECT_EQ(h.metrics(), (std::vector<std::string>{"loss", "accuracy"}));
  ASSERT_EQ(h.points("loss", Split::train).size(), 2u);
  EXPECT_EQ(h.points("loss", Split::train)[1].value, 0.7);
  EXPECT_TRUE(h.points("loss", Split::valid).empty());
  EXPECT_TRUE(h.points("missing", Split::train).empty());
  EXPECT_EQ(h.epochs("loss", Split::valid).size(), 1u);

  // A chart draws the points when there are any, else the epochs at x = epoch.
  EXPECT_EQ(h.curve("loss", Split::train).size(), 2u);
  const std::vector<train::MetricPoint> valid = h.curve("loss", Split::valid);
  ASSERT_EQ(valid.size(), 1u);
  EXPECT_EQ(valid[0].x, 1.0);
  EXPECT_EQ(valid[0].value, 0.75);
}

TEST(MetricHistory, RecordingAnEpochAgainReplacesIt) {
  MetricHistory h;
  h.record_epoch("loss", Split::train, 1, 0.9);
  h.record_epoch("loss", Split::train, 2, 0.8);
  h.record_epoch("loss", Split::train, 2, 0.5);
  ASSERT_EQ(h.epochs("loss", Split::train).size(), 2u);
  EXPECT_EQ(h.last_epoch("loss", Split::train)->value, 0.5);
}

TEST(MetricHistory, BestEpochSkipsNonFiniteValuesAndPrefersTheEarliestTie) {
  MetricHistory h;
  const double values[] = {0.9, NAN, 0.4, -INFINITY, 0.4, 0.6};
  for (int e = 0; e < 6; ++e) h.record_epoch("loss", Split::valid, e + 1, values[e]);
  const auto best = h.best_epoch("loss", Split::valid);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->epoch, 3);
  EXPECT_EQ(best->value, 0.4);
  EXPECT_EQ(h.last_epoch("loss", Split::valid)->epoch, 6);

  for (int e = 1; e <= 3; ++e) h.record_epoch("accuracy", Split::train, e, 0.1 * e);
  EXPECT_EQ(h.best_epoch("accuracy", Split::train)->epoch, 3);
  EXPECT_EQ(h.best_split("accuracy"), Split::train);
  EXPECT_EQ(h.best_split("loss"), Split::valid);

  h.record_epoch("lr", Split::train, 1, 0.1);
  EXPECT_FALSE(h.best_epoch("lr", Split::train));  // improves neither way
  h.record_epoch("diverged", Split::train, 1, NAN);
  h.set_better("diverged", Better::lower);
  EXPECT_FALSE(h.best_epoch("diverged", Split::train));
}

TEST(MetricHistory, BadInputIsAnErrorNamingTheFunction) {
  MetricHistory h;
  try {
    h.record_point("", Split::train, 0, 1);
    FAIL() << "an empty metric name was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "MetricHistory::record_point");
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  EXPECT_THROW(h.record_point("loss", Split::train, NAN, 1), Error);
  EXPECT_THROW(h.record_epoch("loss", Split::train, 0, 1), Error);
  EXPECT_THROW(h.record_epoch("", Split::train, 1, 1), Error);
  EXPECT_THROW(h.set_better("", Better::lower), Error);
  EXPECT_TRUE(h.empty());
}

TEST(MetricHistoryFile, RoundTripKeepsEveryValueAndDirection) {
  MetricHistory h;
  h.set_better("score", Better::higher);
  h.record_point("loss", Split::train, 0.5, 0.71);
  h.record_point("loss", Split::train, 1.0, std::nan(""));
  h.record_epoch("loss", Split::train, 1, 0.6);
  h.record_epoch("loss", Split::valid, 1, std::numeric_limits<double>::infinity());
  h.record_epoch("score", Split::valid, 1, -std::numeric_limits<double>::infinity());
  h.record_epoch("score", Split::valid, 2, 0.125);
  const test::ScratchDir dir("history");
  save_history(h, dir.path() / "h.json");
  const MetricHistory back = load_history(dir.path() / "h.json");
  EXPECT_EQ(back.metrics(), h.metrics());
  EXPECT_EQ(back.better("score"), Better::higher);
  EXPECT_EQ(back.better("loss"), Better::lower);
  ASSERT_EQ(back.points("loss", Split::train).size(), 2u);
  EXPECT_EQ(back.points("loss", Split::train)[0].x, 0.5);
  EXPECT_EQ(back.points("loss", Split::train)[0].value, 0.71);
  EXPECT_TRUE(std::isnan(back.points("loss", Split::train)[1].value));
  EXPECT_EQ(back.epochs("loss", Split::valid)[0].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.epochs("score", Split::valid)[0].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.best_epoch("score", Split::valid)->epoch, 2);
}

TEST(MetricHistoryFile, AMalformedFileIsAnErrorNamingIt) {
  const test::ScratchDir dir("history");
  const auto file = dir.path() / "bad.json";
  std::ofstream(file) << R"({"metrics": [{"name": "loss", "better": "sideways"}]})";
  try {
    load_history(file);
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sideways"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_history(dir.path() / "missing.json"), Error);
}

TEST(MetricFormat, NumbersAreShortAndLocaleFree) {
  EXPECT_EQ(train::format_metric_value(0.23456), "0.2346");
  EXPECT_EQ(train::format_metric_value(2.0), "2");
  EXPECT_EQ(train::format_metric_value(1e-5), "1e-05");
  EXPECT_EQ(train::format_metric_value(9876), "9876");
  EXPECT_EQ(train::format_metric_value(12345), "12.3k");
  EXPECT_EQ(train::format_metric_value(1.52e9), "1.52G");
  EXPECT_EQ(train::format_metric_value(-25000), "-25k");
  EXPECT_EQ(train::format_metric_value(NAN), "NaN");
  EXPECT_EQ(train::format_metric_value(INFINITY), "inf");
  EXPECT_EQ(train::format_metric_value(-INFINITY), "-inf");
  EXPECT_EQ(train::format_fixed(-0.001, 2), "0.00");
  EXPECT_EQ(train::format_fixed(12.345, 2), "12.35");
}

TEST(MetricFormat, Durations) {
  EXPECT_EQ(train::format_duration(3.44), "3.4s");
  EXPECT_EQ(train::format_duration(75), "1:15");
  EXPECT_EQ(train::format_duration(3723), "1:02:03");
  EXPECT_EQ(train::format_duration(-1), "--:--");
  EXPECT_EQ(train::format_duration(NAN), "--:--");
  EXPECT_EQ(train::format_utc_time(std::chrono::system_clock::time_point(std::chrono::seconds(86400 + 61))),
            "1970-01-02 00:01:01 UTC");
}

}  // namespace
}  // namespace kiln::test
