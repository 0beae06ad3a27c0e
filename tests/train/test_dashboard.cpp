// The dashboard through its output, written to a string stream with a clock the test drives:
// plain lines without escape codes, live frames redrawn in place (cursor movement, a progress
// bar as full as the phase, an ETA, the charts), throttling, the terminal's width and height,
// the mode chosen, bad calls, and updates from many threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "kiln/base/error.h"
#include "kiln/train/dashboard.h"
#include "train_test_support.h"

namespace kiln::test {
namespace {

using namespace std::chrono_literals;
using train::Dashboard;
using train::DashboardMode;
using train::Split;

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  void advance(std::chrono::milliseconds d) { now += d; }
};

train::DashboardOptions options_for(DashboardMode mode, std::ostream& out, FakeClock& clock, int width = 100) {
  train::DashboardOptions o;
  o.mode = mode;
  o.out = &out;
  o.width = width;
  o.height = 60;
  o.color = false;
  o.clock = [&clock] { return clock.now; };
  return o;
}

// Two epochs of `batches` train batches and 4 valid batches; each update advances the clock `step`.
void simulate(Dashboard& dash, FakeClock& clock, int batches, std::chrono::milliseconds step, int epochs = 2) {
  dash.begin_run({.title = "test run", .device = "cpu", .settings = {{"lr", "0.1"}}});
  for (int e = 1; e <= epochs; ++e) {
    dash.begin_epoch(e, epochs);
    dash.begin_phase(Split::train, batches);
    for (int b = 1; b <= batches; ++b) {
      clock.advance(step);
      dash.update(b, b * 32, {{"loss", 1.0 / (e + b * 0.01)}, {"accuracy", 0.5 + 0.01 * e}});
    }
    dash.end_phase({{"loss", 1.0 / e}, {"accuracy", 0.5 + 0.1 * e}});
    dash.begin_phase(Split::valid, 4);
    for (int b = 1; b <= 4; ++b) clock.advance(step), dash.update(b, b * 32, {{"loss", 1.1 / e}});
    dash.end_phase({{"loss", 1.1 / e}, {"accuracy", 0.45 + 0.1 * e}});
  }
  dash.end_run({.status = "completed"});
}

// The last frame of a live output: the lines between the last two "clear below" codes.
std::vector<std::string> last_frame(const std::string& out) {
  const std::size_t end = out.rfind("\x1b[J");
  const std::size_t start = out.rfind("\x1b[J", end - 1);
  std::vector<std::string> lines = split_lines(out.substr(start + 3, end - start - 3));
  for (std::string& line : lines) line = strip_escapes(line);
  if (!lines.empty() && lines.front().find("\r") != std::string::npos) lines.front().erase(0, 1);
  return lines;
}

TEST(PlainDashboard, LinesWithoutEscapeCodesOnePerPhase) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::plain, out, clock));
  EXPECT_EQ(dash.mode(), DashboardMode::plain);
  simulate(dash, clock, 50, 1ms);
  const std::string text = out.str();
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  const std::vector<std::string> lines = split_lines(text);
  int phase_lines = 0;
  for (const std::string& line : lines) phase_lines += line.rfind("epoch ", 0) == 0;
  EXPECT_EQ(phase_lines, 4);  // 2 epochs x (train, valid); no progress line within 10 s
  EXPECT_EQ(lines[0], "run test run on cpu");
  EXPECT_EQ(lines[1], "settings: lr=0.1");
  EXPECT_EQ(lines[2].rfind("epoch 1/2 train  loss 1  accuracy 0.6  [50 batches in", 0), 0u) << lines[2];
  EXPECT_NE(lines[5].find("valid  loss 0.55 (best)"), std::string::npos) << lines[5];
  EXPECT_EQ(lines[6].rfind("run completed after 2 epochs", 0), 0u) << lines[6];
  EXPECT_EQ(lines[7], "best: valid loss 0.55 (epoch 2), valid accuracy 0.65 (epoch 2)");
}

TEST(PlainDashboard, ProgressLinesAtMostOncePerInterval) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::plain, out, clock));
  simulate(dash, clock, 35, 1000ms, 1);  // a 35 s train phase: lines at 10, 20 and 30 s
  const std::vector<std::string> lines = split_lines(out.str());
  int progress = 0;
  for (const std::string& line : lines)
    if (line.rfind("epoch 1/1 train ", 0) == 0 && line.find('%') != std::string::npos) {
      ++progress;
      EXPECT_NE(line.find("ETA"), std::string::npos) << line;
    }
  EXPECT_EQ(progress, 3);
  EXPECT_NE(out.str().find("epoch 1/1 train 10/35 (28%) 0:10, ETA 0:25"), std::string::npos) << out.str();
}

TEST(LiveDashboard, FramesRedrawInPlaceWithProgressEtaAndCharts) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::live, out, clock, 100));
  EXPECT_EQ(dash.mode(), DashboardMode::live);
  dash.begin_run({.title = "live", .device = "cpu"});
  dash.begin_epoch(1, 3);
  dash.begin_phase(Split::train, 48);
  for (int b = 1; b <= 12; ++b) clock.advance(250ms), dash.update(b, b * 10, {{"loss", 2.0 - 0.1 * b}});
  const std::string text = out.str();
  EXPECT_NE(text.find("\x1b[K"), std::string::npos);
  EXPECT_NE(text.find("\r\x1b["), std::string::npos);  // back up over the previous block

  const std::vector<std::string> frame = last_frame(text);
  ASSERT_GE(frame.size(), 2u);
  const std::string& progress = frame[1];
  EXPECT_EQ(progress.rfind("train │", 0), 0u) << progress;
  // The bar: full cells plus eighths, as full as 12 of 48 batches.
  const std::size_t open = progress.find("│"), close = progress.find("│", open + 3);
  const std::string bar = progress.substr(open + 3, close - open - 3);
  const int cells = columns_of(bar);
  double filled = count_of(bar, "█");
  const char* eighths[] = {"▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  for (int i = 0; i < 7; ++i) filled += count_of(bar, eighths[i]) * (i + 1) / 8.0;
  EXPECT_NEAR(filled / cells, 0.25, 1.0 / (8 * cells)) << progress;
  EXPECT_NE(progress.find(" 25%  12/48"), std::string::npos) << progress;
  EXPECT_NE(progress.find("3.0s<9.0s ETA"), std::string::npos) << progress;  // 12 batches in 3 s, 36 to go
  EXPECT_NE(progress.find("40 items/s"), std::string::npos) << progress;

  // The chart of the loss so far, under the table.
  std::string all;
  for (const std::string& line : frame) all += line + "\n";
  EXPECT_NE(all.find("loss"), std::string::npos);
  EXPECT_NE(all.find("⠒⠒ train"), std::string::npos) << all;
  EXPECT_FALSE(braille_cells(all).empty());
}

TEST(LiveDashboard, ValidCurveAndBestEpochAfterEpochs) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::live, out, clock, 100));
  simulate(dash, clock, 20, 10ms);
  const std::string text = out.str();
  // The per-phase lines stay above the block; the last frame keeps the charts of both splits.
  EXPECT_NE(text.find("epoch 1/2 train  loss 1"), std::string::npos);
  const std::vector<std::string> frame = last_frame(text);
  std::string all;
  for (const std::string& line : frame) all += line + "\n";
  EXPECT_NE(all.find("⠒⠒ train • valid"), std::string::npos) << all;
  EXPECT_NE(all.find("0.55 valid @2"), std::string::npos) << all;
  EXPECT_NE(all.find("done"), std::string::npos) << all;
  EXPECT_NE(text.find("run completed after 2 epochs"), std::string::npos);
}

TEST(LiveDashboard, ThrottlesFramesToTheRedrawInterval) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::live, out, clock));
  dash.begin_run({.title = "throttle"});
  dash.begin_epoch(1, 1);
  dash.begin_phase(Split::train, 1000);
  const int before = count_of(out.str(), "\x1b[J");
  for (int b = 1; b <= 1000; ++b) clock.advance(1ms), dash.update(b, b, {{"loss", 1.0}});
  const int frames = count_of(out.str(), "\x1b[J") - before;
  EXPECT_GE(frames, 9);  // one second of updates at 10 frames per second
  EXPECT_LE(frames, 11);

  const int still = count_of(out.str(), "\x1b[J");
  for (int b = 1; b <= 1000; ++b) dash.update(b, b, {{"loss", 1.0}});  // no time passes: no frame
  EXPECT_EQ(count_of(out.str(), "\x1b[J"), still);
}

TEST(LiveDashboard, FollowsTheWidthAndFitsTheHeight) {
  for (int width : {40, 80, 160}) {
    SCOPED_TRACE("width " + std::to_string(width));
    std::ostringstream out;
    FakeClock clock;
    train::DashboardOptions o = options_for(DashboardMode::live, out, clock, width);
    o.color = width == 80;  // colors take no columns
    Dashboard dash(o);
    simulate(dash, clock, 10, 10ms);
    const std::vector<std::string> frame = last_frame(out.str());
    for (const std::string& line : frame) EXPECT_LE(columns_of(line), width) << line;
    int titles_on_one_line = 0;
    for (const std::string& line : frame)
      if (line.rfind("loss", 0) == 0) titles_on_one_line = std::max(titles_on_one_line, count_of(line, "⠒⠒ train"));
    EXPECT_EQ(titles_on_one_line, width >= 76 ? 2 : 1);  // loss and accuracy side by side when they fit
  }
  std::ostringstream out;
  FakeClock clock;
  train::DashboardOptions o = options_for(DashboardMode::live, out, clock, 60);
  o.height = 12;  // too short for the charts
  Dashboard dash(o);
  simulate(dash, clock, 10, 10ms);
  const std::vector<std::string> frame = last_frame(out.str());
  EXPECT_LE(frame.size(), 12u);
  EXPECT_NE(frame.back().find("more charts"), std::string::npos) << frame.back();
}

TEST(LiveDashboard, NonFiniteValuesDoNotBreakTheView) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::live, out, clock));
  dash.begin_epoch(1, 1);
  dash.begin_phase(Split::train, 10);
  for (int b = 1; b <= 10; ++b) clock.advance(200ms), dash.update(b, b, {{"loss", b % 2 ? NAN : INFINITY}});
  dash.end_phase({{"loss", NAN}});
  dash.end_run({});
  const std::string text = strip_escapes(out.str());
  EXPECT_NE(text.find("no finite values yet"), std::string::npos);
  EXPECT_NE(text.find("loss NaN"), std::string::npos);
}

TEST(Dashboard, RecordsChartPointsEvenlyAndEpochSummaries) {
  std::ostringstream out;
  FakeClock clock;
  train::DashboardOptions o = options_for(DashboardMode::off, out, clock);
  o.points_per_epoch = 10;
  Dashboard dash(o);
  simulate(dash, clock, 1000, 0ms);
  EXPECT_TRUE(out.str().empty());  // off writes nothing but still records
  const train::MetricHistory h = dash.history();
  const auto points = h.points("loss", Split::train);
  ASSERT_EQ(points.size(), 20u);  // 10 per epoch
  EXPECT_DOUBLE_EQ(points[0].x, 0.1);
  EXPECT_DOUBLE_EQ(points[9].x, 1.0);
  EXPECT_DOUBLE_EQ(points[19].x, 2.0);
  EXPECT_TRUE(h.points("loss", Split::valid).empty());  // validation is charted by epoch
  EXPECT_EQ(h.epochs("loss", Split::valid).size(), 2u);
  EXPECT_EQ(h.best_epoch("accuracy", Split::valid)->epoch, 2);

  // A resumed run restores the earlier epochs, then records its own after them.
  Dashboard resumed(o);
  resumed.restore_history(h);
  resumed.begin_epoch(3, 3);
  resumed.begin_phase(Split::valid, 1);
  resumed.end_phase({{"loss", 0.1}});
  EXPECT_EQ(resumed.history().epochs("loss", Split::valid).size(), 3u);
  EXPECT_EQ(resumed.history().points("loss", Split::train).size(), 20u);
}

// The Learner reports progress every step and values when their reading is in, a few batches
// late: the counts never go back, the values keep until new ones come, and a chart point is
// kept at the batch the values belong to.
TEST(LiveDashboard, ProgressEveryStepValuesWhenRead) {
  std::ostringstream out;
  FakeClock clock;
  train::DashboardOptions o = options_for(DashboardMode::live, out, clock);
  o.points_per_epoch = 100;
  Dashboard dash(o);
  dash.begin_run({.title = "t", .device = "cpu"});
  dash.begin_epoch(1, 1);
  dash.begin_phase(Split::train, 100);
  clock.advance(200ms);
  dash.update(10, 320, {{"loss", 1.5}});
  clock.advance(200ms);
  dash.progress(20, 640);
  std::vector<std::string> frame = last_frame(out.str());
  ASSERT_GE(frame.size(), 2u);
  EXPECT_NE(frame[1].find("20/100"), std::string::npos) << frame[1];
  bool shows_loss = false;
  for (const std::string& line : frame) shows_loss |= line.find("1.5") != std::string::npos;
  EXPECT_TRUE(shows_loss);
  clock.advance(200ms);
  dash.update(15, 480, {{"loss", 0.75}});  // late: read as of batch 15
  frame = last_frame(out.str());
  EXPECT_NE(frame[1].find("20/100"), std::string::npos) << frame[1];
  const train::MetricHistory h = dash.history();
  const auto points = h.points("loss", Split::train);
  ASSERT_EQ(points.size(), 2u);  // progress() keeps none
  EXPECT_DOUBLE_EQ(points[0].x, 0.10);
  EXPECT_DOUBLE_EQ(points[1].x, 0.15);
  EXPECT_DOUBLE_EQ(points[1].value, 0.75);
}

// tick() redraws with nothing new but the time, when a frame is due, and only in a phase; the
// header counts the run's training steps and shows the memory reported.
TEST(LiveDashboard, TicksRedrawTheTimeAndTheHeaderShowsStepAndMemory) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::live, out, clock));
  dash.begin_run({.title = "t", .device = "cpu"});
  const std::size_t header = out.str().size();
  clock.advance(1s);
  dash.tick();  // before any phase: nothing
  EXPECT_EQ(out.str().size(), header);
  dash.begin_epoch(2, 3);
  dash.begin_phase(Split::train, 50);
  dash.set_memory(612.4, 120.6);
  clock.advance(150ms);
  dash.progress(7, 7);
  const std::size_t before = out.str().size();
  dash.tick();  // not due yet (the redraw interval is 100 ms)
  EXPECT_EQ(out.str().size(), before);
  clock.advance(61s);
  dash.tick();
  ASSERT_GT(out.str().size(), before);
  const std::vector<std::string> frame = last_frame(out.str());
  EXPECT_NE(frame[0].find("step 57"), std::string::npos) << frame[0];  // 50 of epoch 1, 7 of epoch 2
  EXPECT_NE(frame[0].find("mem 612 MiB (pool 121)"), std::string::npos) << frame[0];
  EXPECT_NE(frame[0].find("1:02 elapsed"), std::string::npos) << frame[0];  // 1 s + 150 ms + 61 s
}

TEST(Dashboard, FillsInTheRunsStartAndEndForTheReport) {
  std::ostringstream out;
  FakeClock clock;
  Dashboard dash(options_for(DashboardMode::off, out, clock));
  const auto before = std::chrono::system_clock::now();
  dash.begin_run({.title = "times", .settings = {{"seed", "7"}}});
  const train::RunInfo run = dash.run();
  EXPECT_EQ(run.title, "times");
  EXPECT_EQ(run.settings.size(), 1u);
  EXPECT_GE(run.started, before);
  const train::RunOutcome outcome = dash.end_run({.status = "stopped early"});
  EXPECT_EQ(outcome.status, "stopped early");
  EXPECT_GE(outcome.ended, run.started);
  const auto fixed = std::chrono::system_clock::time_point(std::chrono::seconds(5));
  EXPECT_EQ(dash.end_run({.ended = fixed}).ended, fixed);  // a time given is kept
}

TEST(Dashboard, ModeFromTheEnvironmentAndBadCalls) {
  std::ostringstream out;
  train::DashboardOptions o;
  o.out = &out;
  ::unsetenv("KILN_DASHBOARD");
  EXPECT_EQ(Dashboard(o).mode(), DashboardMode::plain);  // a string stream is not a terminal
  ::setenv("KILN_DASHBOARD", "live", 1);
  EXPECT_EQ(Dashboard(o).mode(), DashboardMode::live);
  ::setenv("KILN_DASHBOARD", "off", 1);
  EXPECT_EQ(Dashboard(o).mode(), DashboardMode::off);
  o.mode = DashboardMode::plain;  // an explicit mode wins over the environment
  EXPECT_EQ(Dashboard(o).mode(), DashboardMode::plain);
  o.mode = DashboardMode::automatic;
  ::setenv("KILN_DASHBOARD", "fancy", 1);
  try {
    Dashboard bad(o);
    FAIL() << "KILN_DASHBOARD=fancy was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KILN_DASHBOARD"), std::string::npos) << e.what();
  }
  ::unsetenv("KILN_DASHBOARD");

  Dashboard dash(o);
  EXPECT_THROW(dash.begin_phase(Split::train, 10), Error);  // before begin_epoch
  EXPECT_THROW(dash.end_phase({}), Error);
  EXPECT_THROW(dash.begin_epoch(0, 3), Error);
  dash.begin_epoch(1, 3);
  EXPECT_THROW(dash.begin_phase(Split::train, -1), Error);
  dash.begin_phase(Split::train, 10);
  EXPECT_THROW(dash.update(-1, 0, {}), Error);
  try {
    dash.update(1, 1, {{"", 1.0}});
    FAIL() << "an empty metric name was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "Dashboard::update");
  }
  dash.end_phase({{"loss", 1.0}});
  dash.update(2, 2, {{"loss", 0.5}});  // after end_phase: dropped
  EXPECT_EQ(dash.history().points("loss", Split::train).size(), 0u);
}

// Updates from worker threads while the main thread prints messages: every frame and message
// comes out whole (run under ThreadSanitizer in CI's sanitizer build).
TEST(Dashboard, ConcurrentUpdatesAndMessagesNeverInterleave) {
  std::ostringstream out;
  train::DashboardOptions o;
  o.mode = DashboardMode::live;
  o.out = &out;
  o.width = 80;
  o.color = false;
  o.redraw_interval = 0ms;  // a frame on every update: the most contention
  Dashboard dash(o);
  dash.begin_run({.title = "threads"});
  dash.begin_epoch(1, 1);
  dash.begin_phase(Split::train, 4 * 300);
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&dash, w] {
      for (int b = 1; b <= 300; ++b) dash.update(w * 300 + b, b, {{"loss", 1.0 / b}, {"accuracy", 0.001 * b}});
    });
  for (int m = 0; m < 100; ++m) dash.message("message " + std::to_string(m));
  for (std::thread& t : workers) t.join();
  dash.end_phase({{"loss", 0.1}});
  dash.end_run({});
  const std::string text = out.str();
  for (int m = 0; m < 100; ++m) {
    const std::string line = "message " + std::to_string(m) + "\x1b[K\n";
    EXPECT_EQ(count_of(text, line), 1) << line;
  }
  // Each frame starts by moving up over the previous one and ends by clearing below: as many of
  // one as of the other (the first frame has nothing to move over).
  EXPECT_EQ(count_of(text, "\r\x1b["), count_of(text, "\x1b[J") - 1);
}

}  // namespace
}  // namespace kiln::test
