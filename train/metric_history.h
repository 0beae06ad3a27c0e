// The history of a run's metrics: for each metric and split (train, valid), the points drawn in
// charts (x = the run's position in epochs: 2.5 is half-way through the third epoch) and one
// summary per epoch. It also knows what "better" means for each metric, so the dashboard and the
// report can name the best epoch. Plain numbers and strings: no tensors, no devices.
//
//   MetricHistory h;
//   h.record_point("loss", Split::train, 0.5, 0.71);   // half-way through epoch 1
//   h.record_epoch("loss", Split::valid, 1, 0.64);     // epoch 1's validation mean
//   h.best_epoch("loss", Split::valid);                // {epoch 1, 0.64}: lower is better
#pragma once
#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::train {

enum class Split { train, valid };
std::string_view split_name(Split split);  // "train", "valid"
inline constexpr Split kSplits[] = {Split::train, Split::valid};

// Which way a metric improves. Metrics that measure the run rather than the model (learning
// rate, items per second, memory) improve neither way and have no best epoch.
enum class Better { lower, higher, neither };

// The direction a metric's name implies: loss, error, perplexity, mse, mae -> lower; accuracy,
// top-k, f1, precision, recall, auc, iou -> higher; anything else -> neither. A metric whose name
// misleads (or a user-defined one) is set explicitly with MetricHistory::set_better.
Better better_by_name(std::string_view metric);

struct MetricPoint {
  double x = 0;  // epochs elapsed
  double value = 0;
};

struct EpochValue {
  int epoch = 0;  // 1-based
  double value = 0;
};

// Not thread-safe: one writer, or a lock around it (the Dashboard holds one). Values may be NaN
// or infinite (a diverged loss): they are kept, shown as such, and skipped by charts and by best.
class MetricHistory {
 public:
  // Overrides better_by_name for this metric; may come before or after its first record.
  void set_better(std::string_view metric, Better better);
  Better better(std::string_view metric) const;

  // Throws kiln::Error on an empty metric name or a non-finite x.
  void record_point(std::string_view metric, Split split, double x, double value);
  // Recording an epoch again (a resumed run) replaces its value. Throws on an empty name or epoch < 1.
  void record_epoch(std::string_view metric, Split split, int epoch, double value);

  // Every metric with a record, in the order of their first record.
  std::vector<std::string> metrics() const;
  bool contains(std::string_view metric) const;
  bool empty() const { return metrics_.empty(); }

  // Unknown metrics and splits without records give empty results, not errors: a metric may be
  // recorded for one split only (the learning rate while training).
  std::span<const MetricPoint> points(std::string_view metric, Split split) const;
  std::span<const EpochValue> epochs(std::string_view metric, Split split) const;
  // What a chart draws: the points when there are any, else the epoch summaries at x = epoch.
  std::vector<MetricPoint> curve(std::string_view metric, Split split) const;

  std::optional<EpochValue> last_epoch(std::string_view metric, Split split) const;
  // The best finite epoch summary (the earliest of equal ones); none when the metric improves
  // neither way or has no finite summary.
  std::optional<EpochValue> best_epoch(std::string_view metric, Split split) const;
  // The split whose best epoch the report and dashboard show: valid when it has summaries.
  Split best_split(std::string_view metric) const;

 private:
  struct Series {
    std::vector<MetricPoint> points{};
    std::vector<EpochValue> epochs{};
  };
  struct Metric {
    std::string name{};
    std::array<Series, 2> series{};  // by index_of(split)
  };
  const Metric* find(std::string_view metric) const;
  Metric& find_or_add(std::string_view metric, const char* op);

  std::vector<Metric> metrics_{};
  // Set apart from metrics_: declaring a metric's direction does not make it a recorded metric.
  std::vector<std::pair<std::string, Better>> better_{};
};

}  // namespace kiln::train
