#include "train/metric_history_file.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "io/atomic_file.h"
#include "ops/error.h"

namespace kiln::train {

namespace {

using Json = nlohmann::json;

Json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double number(const Json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::invalid_argument("\"" + s + "\" is not a number");
}

const char* better_name(Better b) { return b == Better::lower ? "lower" : b == Better::higher ? "higher" : "neither"; }

Better parse_better(const std::string& s) {
  if (s == "lower") return Better::lower;
  if (s == "higher") return Better::higher;
  if (s == "neither") return Better::neither;
  throw std::invalid_argument("better is \"" + s + "\"");
}

}  // namespace

void save_history(const MetricHistory& history, const std::filesystem::path& file) {
  Json metrics = Json::array();
  for (const std::string& name : history.metrics()) {
    Json m{{"name", name}, {"better", better_name(history.better(name))}};
    for (Split split : kSplits) {
      Json points = Json::array(), epochs = Json::array();
      for (const MetricPoint& p : history.points(name, split)) points.push_back({p.x, number(p.value)});
      for (const EpochValue& e : history.epochs(name, split)) epochs.push_back({e.epoch, number(e.value)});
      m[std::string(split_name(split))] = {{"points", points}, {"epochs", epochs}};
    }
    metrics.push_back(std::move(m));
  }
  const std::string text = Json{{"metrics", metrics}}.dump();
  io::detail::AtomicFile out(file, "train::save_history");
  out.write(std::as_bytes(std::span(text)));
  out.commit();
}

MetricHistory load_history(const std::filesystem::path& file) {
  std::ifstream in(file);
  KILN_CHECK(in.good(), "train::load_history", "cannot open " + file.string());
  MetricHistory history;
  try {
    const Json doc = Json::parse(in);
    for (const Json& m : doc.at("metrics")) {
      const std::string name = m.at("name").get<std::string>();
      history.set_better(name, parse_better(m.at("better").get<std::string>()));
      for (Split split : kSplits) {
        const Json& series = m.at(std::string(split_name(split)));
        for (const Json& p : series.at("points")) history.record_point(name, split, p.at(0).get<double>(), number(p.at(1)));
        for (const Json& e : series.at("epochs")) history.record_epoch(name, split, e.at(0).get<int>(), number(e.at(1)));
      }
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("train::load_history", file.string() + " is not a metric history: " + e.what());
  }
  return history;
}

}  // namespace kiln::train
