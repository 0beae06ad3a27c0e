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

// A run's processes, items per process and batch, and batches per epoch.
struct DataLayout {
  int world_size = 0;
  std::int64_t batch_size = 0, train_batches = 0;
  bool recorded() const { return world_size > 0 && batch_size > 0; }
  // The same samples in every step (a different epoch length is the loader's check, not this).
  bool same_steps(const DataLayout& o) const { return world_size == o.world_size && batch_size == o.batch_size; }
};

struct LearnerState {
  Progress at{};
  std::optional<double> best{};  // early stopping
  std::int64_t since_best = 0;
  // The training of epoch at.epoch so far (at.batch batches); none at an epoch's end.
  std::optional<PhaseSnapshot> train{};
  std::map<std::string, std::uintmax_t> file_sizes{};  // of the checkpoint's other files
  // How the writer batched an epoch (0: not recorded): its place in the epoch's data is
  // at.batch * batch_size * world_size samples, where a run with another number of processes or
  // batch size resumes (resume_point).
  DataLayout layout{};
};

// Written with fsync (the checkpoint's commit renames its folder into place afterwards).
void save_learner_state(const LearnerState& state, const std::filesystem::path& file);
// Throws kiln::Error naming the file when it cannot be read or is not a Learner state.
LearnerState load_learner_state(const std::filesystem::path& file);
// Where a run batched as `layout` resumes from `state` (its training state, when it has one,
// moved there too): at the same sample of the epoch's order, so that no sample is seen twice or
// skipped, whatever batch index that is. (A distributed sampler gives N processes the positions
// r, r + N, ... of one order, so their first k batches of B hold its first k * B * N positions.)
// kiln::Error when no batch of this run starts there. The writer's own place when the state does
// not record its layout or its steps are the same.
Progress resume_point(LearnerState& state, const DataLayout& layout);
// Throws kiln::Error when a file beside `state_file` does not have the size the state recorded.
void check_file_sizes(const LearnerState& state, const std::filesystem::path& state_file);

}  // namespace kiln::train
