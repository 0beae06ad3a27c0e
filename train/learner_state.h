// The Learner's own part of a checkpoint (learner.json beside checkpoint.safetensors and
// history.json): what io::save_checkpoint does not hold and an exact resume needs. The early
// stopping's best value and patience count, and for a checkpoint written in the middle of an
// epoch, the epoch's training so far (its metric totals and counts), so that the resumed epoch's
// values cover the whole epoch. It also records the sizes of the other two files: a truncated
// file is found before anything is loaded.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/train/checkpoint_dir.h"
#include "kiln/train/metrics.h"

namespace kiln::train {

// A phase's progress and metric totals, to continue it after a resume.
struct PhaseSnapshot {
  std::int64_t batches = 0, items = 0;
  double seconds = 0;  // spent on it before the checkpoint (for items per second)
  // By metric name; none for a metric that cannot save its state.
  std::vector<std::pair<std::string, std::optional<MetricState>>> metrics{};
};

struct LearnerState {
  Progress at{};
  std::optional<double> best{};  // early stopping
  std::int64_t since_best = 0;
  // The training of epoch at.epoch so far (at.batch batches); none at an epoch's end.
  std::optional<PhaseSnapshot> train{};
  std::map<std::string, std::uintmax_t> file_sizes{};  // of the checkpoint's other files
};

// Written with fsync (the checkpoint's commit renames its folder into place afterwards).
void save_learner_state(const LearnerState& state, const std::filesystem::path& file);
// Throws kiln::Error naming the file when it cannot be read or is not a Learner state.
LearnerState load_learner_state(const std::filesystem::path& file);
// Throws kiln::Error when a file beside `state_file` does not have the size the state recorded.
void check_file_sizes(const LearnerState& state, const std::filesystem::path& state_file);

}  // namespace kiln::train
