#include "kiln/train/metric_history.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "kiln/base/error.h"

namespace kiln::train {

namespace {

bool name_contains(std::string_view name, std::string_view word) {
  return std::search(name.begin(), name.end(), word.begin(), word.end(),
                     [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }) != name.end();
}

std::size_t index_of(Split split) { return split == Split::train ? 0 : 1; }

}  // namespace

std::string_view split_name(Split split) { return split == Split::train ? "train" : "valid"; }

Better better_by_name(std::string_view metric) {
  for (std::string_view word : {"loss", "error", "perplexity", "mse", "mae", "rmse"})
    if (name_contains(metric, word)) return Better::lower;
  for (std::string_view word : {"acc", "top", "f1", "precision", "recall", "auc", "iou", "dice", "bleu"})
    if (name_contains(metric, word)) return Better::higher;
  return Better::neither;
}

const MetricHistory::Metric* MetricHistory::find(std::string_view metric) const {
  for (const Metric& m : metrics_)
    if (m.name == metric) return &m;
  return nullptr;
}

MetricHistory::Metric& MetricHistory::find_or_add(std::string_view metric, const char* op) {
  KILN_CHECK(!metric.empty(), op, "the metric name is empty");
  for (Metric& m : metrics_)
    if (m.name == metric) return m;
  Metric& added = metrics_.emplace_back();
  added.name = metric;
  return added;
}

void MetricHistory::set_better(std::string_view metric, Better better) {
  KILN_CHECK(!metric.empty(), "MetricHistory::set_better", "the metric name is empty");
  for (auto& [name, direction] : better_)
    if (name == metric) {
      direction = better;
      return;
    }
  better_.emplace_back(std::string(metric), better);
}

Better MetricHistory::better(std::string_view metric) const {
  for (const auto& [name, direction] : better_)
    if (name == metric) return direction;
  return better_by_name(metric);
}

void MetricHistory::record_point(std::string_view metric, Split split, double x, double value) {
  KILN_CHECK(std::isfinite(x), "MetricHistory::record_point",
             "metric '" + std::string(metric) + "': x must be finite, got " + std::to_string(x));
  find_or_add(metric, "MetricHistory::record_point").series[index_of(split)].points.push_back({x, value});
}

void MetricHistory::record_epoch(std::string_view metric, Split split, int epoch, double value) {
  KILN_CHECK(epoch >= 1, "MetricHistory::record_epoch",
             "metric '" + std::string(metric) + "': epochs count from 1, got " + std::to_string(epoch));
  std::vector<EpochValue>& epochs = find_or_add(metric, "MetricHistory::record_epoch").series[index_of(split)].epochs;
  for (EpochValue& e : epochs) {
    if (e.epoch == epoch) {
      e.value = value;
      return;
    }
  }
  epochs.push_back({epoch, value});
}

std::vector<std::string> MetricHistory::metrics() const {
  std::vector<std::string> names;
  names.reserve(metrics_.size());
  for (const Metric& m : metrics_) names.push_back(m.name);
  return names;
}

bool MetricHistory::contains(std::string_view metric) const { return find(metric) != nullptr; }

std::span<const MetricPoint> MetricHistory::points(std::string_view metric, Split split) const {
  const Metric* m = find(metric);
  return m ? std::span<const MetricPoint>(m->series[index_of(split)].points) : std::span<const MetricPoint>();
}

std::span<const EpochValue> MetricHistory::epochs(std::string_view metric, Split split) const {
  const Metric* m = find(metric);
  return m ? std::span<const EpochValue>(m->series[index_of(split)].epochs) : std::span<const EpochValue>();
}

std::vector<MetricPoint> MetricHistory::curve(std::string_view metric, Split split) const {
  const std::span<const MetricPoint> fine = points(metric, split);
  if (!fine.empty()) return {fine.begin(), fine.end()};
  std::vector<MetricPoint> coarse;
  for (const EpochValue& e : epochs(metric, split)) coarse.push_back({static_cast<double>(e.epoch), e.value});
  return coarse;
}

std::optional<EpochValue> MetricHistory::last_epoch(std::string_view metric, Split split) const {
  const std::span<const EpochValue> all = epochs(metric, split);
  if (all.empty()) return std::nullopt;
  return *std::max_element(all.begin(), all.end(), [](EpochValue a, EpochValue b) { return a.epoch < b.epoch; });
}

std::optional<EpochValue> MetricHistory::best_epoch(std::string_view metric, Split split) const {
  const Better direction = better(metric);
  if (direction == Better::neither) return std::nullopt;
  std::optional<EpochValue> best;
  for (const EpochValue& e : epochs(metric, split)) {
    if (!std::isfinite(e.value)) continue;
    const bool improves = !best || (direction == Better::lower ? e.value < best->value : e.value > best->value) ||
                          (e.value == best->value && e.epoch < best->epoch);
    if (improves) best = e;
  }
  return best;
}

Split MetricHistory::best_split(std::string_view metric) const {
  return epochs(metric, Split::valid).empty() ? Split::train : Split::valid;
}

}  // namespace kiln::train
