// What the dashboard and the report say about a run besides its metrics: its name, settings and
// device when it starts; how it ended and any metrics measured after training when it ends.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::train {

struct MetricValue {
  std::string name{};
  double value = 0;
};
// Metrics in the order they are shown (loss first, as the Learner reports them).
using MetricValues = std::vector<MetricValue>;

struct RunInfo {
  std::string title{};   // "fashion-mnist mlp"
  std::string device{};  // "cpu", "vulkan:0 (AMD Radeon ...)"
  // Shown in this order: hyper-parameters, dataset sizes, seed, anything the user adds.
  std::vector<std::pair<std::string, std::string>> settings{};
  std::chrono::system_clock::time_point started{};  // wall clock; set by Dashboard::begin_run when unset
};

struct RunOutcome {
  // One line: "completed", "stopped early at epoch 7: valid loss did not improve for 3 epochs",
  // "failed: out of memory".
  std::string status = "completed";
  std::chrono::system_clock::time_point ended{};  // wall clock; Dashboard::end_run fills it in when unset
  // Metrics measured after training (a test set); the report shows them in a column of their own.
  MetricValues final_metrics{};
};

}  // namespace kiln::train
