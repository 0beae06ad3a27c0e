// The HTML report: a well-formed document (the whole file parses as XML) holding one chart per
// metric with one curve per split recorded, numbers that match the history, hostile names
// escaped, non-finite values left out of the curves, the same bytes for the same run, and an
// atomic write that leaves the old report in place when it fails.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/base/error.h"
#include "kiln/train/html_report.h"
#include "xml_checker.h"

namespace kiln::test {
namespace {

using train::MetricHistory;
using train::Split;

namespace fs = std::filesystem;

train::RunInfo run_info() {
  return {.title = "mnist mlp",
          .device = "cpu",
          .settings = {{"lr", "0.001"}, {"batch size", "64"}},
          .started = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000))};
}

train::RunOutcome outcome() {
  return {.status = "completed",
          .ended = std::chrono::system_clock::time_point(std::chrono::seconds(1700000125)),
          .final_metrics = {{"test accuracy", 0.91}}};
}

// Three epochs: loss with train points and valid epochs, accuracy with epochs on both splits, and
// a learning rate recorded only while training.
MetricHistory three_epochs() {
  MetricHistory h;
  for (int i = 1; i <= 30; ++i) {
    h.record_point("loss", Split::train, i / 10.0, 2.0 / (1 + i / 10.0));
    h.record_point("learning rate", Split::train, i / 10.0, 0.001 * (1 - i / 40.0));
  }
  const double valid_loss[] = {0.9, 0.7, 0.75};
  for (int e = 1; e <= 3; ++e) {
    h.record_epoch("loss", Split::train, e, 2.0 / (1 + e));
    h.record_epoch("loss", Split::valid, e, valid_loss[e - 1]);
    h.record_epoch("accuracy", Split::train, e, 0.6 + 0.1 * e);
    h.record_epoch("accuracy", Split::valid, e, 0.55 + 0.1 * e);
  }
  return h;
}

const XmlElement* figure_of(const XmlElement& root, const std::string& metric) {
  for (const XmlElement* f : root.find_all("figure"))
    if (f->attribute("data-metric") == metric) return f;
  return nullptr;
}

std::vector<std::pair<double, double>> polyline_points(const XmlElement& polyline) {
  std::vector<std::pair<double, double>> points;
  std::istringstream in(polyline.attribute("points"));
  for (std::string pair; in >> pair;) {
    const std::size_t comma = pair.find(',');
    points.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return points;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(HtmlReport, WellFormedWithOneChartPerMetricAndOneCurvePerSplit) {
  const MetricHistory h = three_epochs();
  const std::string html = train::html_report(run_info(), outcome(), h);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0), 0u);
  const XmlElement root = parse_xml(html);
  EXPECT_EQ(root.name, "html");
  EXPECT_TRUE(root.find_all("script").empty());
  EXPECT_TRUE(root.find_all("link").empty());  // self-contained: nothing fetched

  const std::vector<const XmlElement*> figures = root.find_all("figure");
  ASSERT_EQ(figures.size(), 3u);
  EXPECT_EQ(root.find_all("svg").size(), 3u);
  const std::vector<std::string> names{"loss", "learning rate", "accuracy"};
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(figures[i]->attribute("data-metric"), names[i]);

  for (const std::string& metric : names) {
    SCOPED_TRACE(metric);
    const XmlElement* figure = figure_of(root, metric);
    ASSERT_NE(figure, nullptr);
    const std::vector<const XmlElement*> polylines = figure->find_all("polyline");
    std::vector<std::string> splits;
    for (const XmlElement* p : polylines) {
      splits.push_back(p->attribute("data-split"));
      const Split split = p->attribute("data-split") == "train" ? Split::train : Split::valid;
      const std::size_t recorded = h.curve(metric, split).size();
      EXPECT_EQ(p->attribute("data-points"), std::to_string(recorded));
      EXPECT_EQ(polyline_points(*p).size(), recorded);
      EXPECT_FALSE(p->find_all("title").empty());
    }
    const std::vector<std::string> expected_splits =
        metric == "learning rate" ? std::vector<std::string>{"train"} : std::vector<std::string>{"train", "valid"};
    EXPECT_EQ(splits, expected_splits);
  }
}

TEST(HtmlReport, CurvesFollowTheValuesAndMarkersCarryThem) {
  const XmlElement root = parse_xml(train::html_report(run_info(), outcome(), three_epochs()));
  const XmlElement* loss = figure_of(root, "loss");
  ASSERT_NE(loss, nullptr);
  const XmlElement* train_curve = loss->find_all("polyline")[0];
  const auto points = polyline_points(*train_curve);
  for (std::size_t i = 1; i < points.size(); ++i) {
    EXPECT_GT(points[i].first, points[i - 1].first);    // x grows with the epochs
    EXPECT_GT(points[i].second, points[i - 1].second);  // a falling loss goes down the chart (SVG y grows down)
  }
  // Short curves get a marker per point whose title holds the value; the best epoch is ringed.
  std::vector<std::string> valid_titles;
  for (const XmlElement* g : loss->find_all("g"))
    if (g->has_class("markers") && g->attribute("data-split") == "valid")
      for (const XmlElement* c : g->find_all("circle")) valid_titles.push_back(c->text);
  EXPECT_EQ(valid_titles, (std::vector<std::string>{"valid loss, epoch 1: 0.9", "valid loss, epoch 2: 0.7",
                                                    "valid loss, epoch 3: 0.75"}));
  int best = 0;
  for (const XmlElement* c : loss->find_all("circle"))
    if (c->has_class("best")) {
      ++best;
      EXPECT_EQ(c->text, "best valid loss: 0.7 (epoch 2)");
    }
  EXPECT_EQ(best, 1);
  EXPECT_NE(loss->find_all("figcaption")[0]->text.find("lower is better; best valid 0.7 at epoch 2"),
            std::string::npos);
}

TEST(HtmlReport, TablesHoldTheSettingsAndTheFinalMetricsWithTheBestEpoch) {
  const XmlElement root = parse_xml(train::html_report(run_info(), outcome(), three_epochs()));
  std::map<std::string, std::string> rows;
  for (const XmlElement* tr : root.find_all("tr")) {
    const auto th = tr->find_all("th"), td = tr->find_all("td");
    if (th.size() == 1 && td.size() == 1) rows[th[0]->text] = td[0]->text;
  }
  EXPECT_EQ(rows["lr"], "0.001");
  EXPECT_EQ(rows["batch size"], "64");
  EXPECT_EQ(rows["device"], "cpu");
  EXPECT_EQ(rows["started"], "2023-11-14 22:13:20 UTC");
  EXPECT_EQ(rows["duration"], "2:05");
  EXPECT_EQ(rows["epochs"], "3");

  std::map<std::string, const XmlElement*> metric_rows;
  for (const XmlElement* tr : root.find_all("tr"))
    if (!tr->attribute("data-metric").empty()) metric_rows[tr->attribute("data-metric")] = tr;
  ASSERT_EQ(metric_rows.size(), 4u);  // three recorded, and the test accuracy
  const auto loss = metric_rows["loss"]->find_all("td");
  ASSERT_EQ(loss.size(), 4u);  // train, valid, final, best
  EXPECT_EQ(loss[0]->text, "0.5");
  EXPECT_EQ(loss[1]->text, "0.75");
  EXPECT_EQ(loss[3]->attribute("data-epoch"), "2");
  const auto accuracy = metric_rows["accuracy"]->find_all("td");
  EXPECT_TRUE(accuracy[1]->has_class("best"));  // its last epoch is its best
  EXPECT_EQ(metric_rows["test accuracy"]->find_all("td")[2]->text, "0.91");
}

TEST(HtmlReport, HostileNamesAreEscaped) {
  MetricHistory h;
  const std::string metric = "<script>alert('x')</script> & \"quotes\"";
  h.record_epoch(metric, Split::train, 1, 0.5);
  h.record_epoch(metric, Split::valid, 1, 0.4);
  train::RunInfo run = run_info();
  run.title = "</title><script>alert(1)</script>";
  run.device = std::string("gpu\x01\x7f") + "\xff\xfe" + "ok";  // control bytes and bytes that are not UTF-8
  run.settings = {{"a&b", "<!-- not a comment -->"}, {"]]>", "&amp; stays text"}};
  const std::string html = train::html_report(run, outcome(), h);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<!-- not"), std::string::npos);
  const XmlElement root = parse_xml(html);
  EXPECT_EQ(root.find_all("h1")[0]->text, run.title);  // decoded, the text is the user's
  ASSERT_NE(figure_of(root, metric), nullptr);
  EXPECT_EQ(root.find_all("figure").size(), 1u);
  std::map<std::string, std::string> rows;
  for (const XmlElement* tr : root.find_all("tr")) {
    const auto th = tr->find_all("th"), td = tr->find_all("td");
    if (th.size() == 1 && td.size() == 1) rows[th[0]->text] = td[0]->text;
  }
  EXPECT_EQ(rows["a&b"], "<!-- not a comment -->");
  EXPECT_EQ(rows["]]>"], "&amp; stays text");
  EXPECT_EQ(rows["device"], "gpu\uFFFD\uFFFD\uFFFD\uFFFDok");
}

TEST(HtmlReport, NonFiniteValuesOnePointAndFlatCurvesStillDraw) {
  MetricHistory h;
  const double values[] = {1.0, NAN, 0.5, INFINITY};
  for (int e = 1; e <= 4; ++e) h.record_epoch("loss", Split::valid, e, values[e - 1]);
  h.record_epoch("accuracy", Split::valid, 1, 0.8);                          // one point
  for (int e = 1; e <= 3; ++e) h.record_epoch("lr", Split::train, e, 0.01);  // flat
  h.record_epoch("diverged", Split::train, 1, NAN);                          // nothing finite
  const std::string html = train::html_report(run_info(), {}, h);
  const XmlElement root = parse_xml(html);
  ASSERT_EQ(root.find_all("figure").size(), 4u);

  const XmlElement* loss = figure_of(root, "loss");
  const XmlElement* curve = loss->find_all("polyline")[0];
  EXPECT_EQ(curve->attribute("data-points"), "2");
  EXPECT_EQ(curve->attribute("points").find_first_not_of("0123456789., -"), std::string::npos);
  EXPECT_NE(loss->find_all("figcaption")[0]->text.find("2 non-finite values (NaN or inf) not drawn"),
            std::string::npos);

  const XmlElement* accuracy = figure_of(root, "accuracy");
  EXPECT_EQ(accuracy->find_all("polyline")[0]->attribute("data-points"), "1");
  EXPECT_EQ(accuracy->find_all("circle").size(), 2u);  // the point and its best-epoch ring

  const auto flat = polyline_points(*figure_of(root, "lr")->find_all("polyline")[0]);
  ASSERT_EQ(flat.size(), 3u);
  for (const auto& p : flat) {
    EXPECT_EQ(p.second, flat[0].second);
    EXPECT_GT(p.second, 40.0);  // inside the plot area, not on its edge
    EXPECT_LT(p.second, 252.0);
  }

  const XmlElement* diverged = figure_of(root, "diverged");
  EXPECT_TRUE(diverged->find_all("polyline").empty());
  EXPECT_NE(diverged->find_all("figcaption")[0]->text.find("no finite values"), std::string::npos);
  EXPECT_EQ(html.find("nan"), std::string::npos);
  EXPECT_NE(html.find(">NaN<"), std::string::npos);  // the table says so
}

TEST(HtmlReport, EmptyHistoryIsStillAReport) {
  const XmlElement root = parse_xml(train::html_report({}, {}, MetricHistory{}));
  EXPECT_TRUE(root.find_all("svg").empty());
  EXPECT_EQ(root.find_all("h1")[0]->text, "training run");
}

TEST(HtmlReport, SameRunSameBytesAndTheFileHoldsThem) {
  const fs::path dir = fs::temp_directory_path() / ("kiln_report_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string html = train::html_report(run_info(), outcome(), three_epochs());
  EXPECT_EQ(html, train::html_report(run_info(), outcome(), three_epochs()));
  train::write_html_report(dir / "report.html", run_info(), outcome(), three_epochs());
  EXPECT_EQ(read_file(dir / "report.html"), html);
  fs::remove_all(dir);
}

TEST(HtmlReport, UnwritablePathIsAnErrorNamingIt) {
  const fs::path path = fs::temp_directory_path() / "kiln_no_such_directory" / "report.html";
  try {
    train::write_html_report(path, run_info(), outcome(), three_epochs());
    FAIL() << "wrote into a directory that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "write_html_report");
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(train::write_html_report("", run_info(), outcome(), three_epochs()), Error);
}

// A write that fails halfway (here: the process may write only 1 KiB per file, so the write gets
// EFBIG, which holds even for root) leaves the previous report as it was and no temporary file.
TEST(HtmlReport, AFailedWriteLeavesTheOldReport) {
  const fs::path dir = fs::temp_directory_path() / ("kiln_report_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "report.html";
  train::write_html_report(path, run_info(), outcome(), MetricHistory{});
  const std::string old_report = read_file(path);

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
  rlimit small = saved;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    train::write_html_report(path, run_info(), outcome(), three_epochs());
  } catch (const Error& e) {
    threw = true;
    EXPECT_EQ(e.op(), "write_html_report");
    EXPECT_NE(std::string(e.what()).find("unchanged"), std::string::npos) << e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_TRUE(threw);
  EXPECT_EQ(read_file(path), old_report);
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::test
