#include "kiln/train/metric_history_file.h"

#include "kiln/base/error.h"
#include "kiln/train/json_file.h"

namespace kiln::train {

namespace {

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
      for (const MetricPoint& p : history.points(name, split)) points.push_back({p.x, json_number(p.value)});
      for (const EpochValue& e : history.epochs(name, split)) epochs.push_back({e.epoch, json_number(e.value)});
      m[std::string(split_name(split))] = {{"points", points}, {"epochs", epochs}};
    }
    metrics.push_back(std::move(m));
  }
  save_json(file, Json{{"metrics", metrics}}, "train::save_history");
}

MetricHistory load_history(const std::filesystem::path& file) {
  return load_json(file, "train::load_history", "a metric history", [](const Json& doc) {
    MetricHistory history;
    for (const Json& m : doc.at("metrics")) {
      const std::string name = m.at("name").get<std::string>();
      history.set_better(name, parse_better(m.at("better").get<std::string>()));
      for (Split split : kSplits) {
        const Json& series = m.at(std::string(split_name(split)));
        for (const Json& p : series.at("points"))
          history.record_point(name, split, p.at(0).get<double>(), number_from_json(p.at(1)));
        for (const Json& e : series.at("epochs"))
          history.record_epoch(name, split, e.at(0).get<int>(), number_from_json(e.at(1)));
      }
    }
    return history;
  });
}

}  // namespace kiln::train
