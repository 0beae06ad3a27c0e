// A folder of a run's checkpoints, "epoch-0003.safetensors" (after an epoch) and
// "epoch-0003-batch-000120.safetensors" (an epoch cut short by Ctrl-C), of which the newest
// `keep` stay. Files are written by io::save_checkpoint (a temporary file renamed into place),
// so the newest file is always a whole one.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace kiln::train {

// Where training stands: `epoch` epochs done and, within the next, `batch` batches.
struct Progress {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
  bool operator<(const Progress& o) const { return epoch != o.epoch ? epoch < o.epoch : batch < o.batch; }
};

class CheckpointDir {
 public:
  CheckpointDir(std::filesystem::path dir, std::int64_t keep);

  const std::filesystem::path& path() const { return dir_; }
  // The file for `at` (created by the caller), and the removal of those past the newest `keep`.
  std::filesystem::path file_for(Progress at) const;
  // The metric history written beside a checkpoint ("epoch-0003.history.json").
  static std::filesystem::path history_for(const std::filesystem::path& checkpoint);
  void prune() const;  // a pruned checkpoint's history goes with it
  // The checkpoints present, oldest first.
  std::vector<std::pair<Progress, std::filesystem::path>> list() const;
  std::optional<std::pair<Progress, std::filesystem::path>> latest() const;

 private:
  std::filesystem::path dir_;
  std::int64_t keep_;
};

}  // namespace kiln::train
