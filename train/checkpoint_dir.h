// A folder of a run's checkpoints, of which the newest `keep` stay. Each checkpoint is a folder,
// "epoch-0003" (after an epoch) or "epoch-0003-batch-000120" (an epoch cut short by Ctrl-C),
// holding three files that belong together:
//
//   checkpoint.safetensors   weights, optimizer, schedule, step, random generator (io::save_checkpoint)
//   history.json             the run's metric history so far (save_history)
//   learner.json             the Learner's own state: early stopping, the interrupted epoch's metric totals
//
// They are written into a temporary folder (".epoch-0003.tmp-PID-N"), each file flushed to disk,
// and the folder is renamed into place: a checkpoint is all three files or none, whenever the
// process dies. The next run's clean_up() removes what an interrupted write left.
//
// Checkpoints of older runs, files "epoch-0003.safetensors" with "epoch-0003.history.json"
// beside them, are still listed and read (they have no Learner state).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::train {

// Where training stands: `epoch` epochs done and, within the next, `batch` batches.
struct Progress {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
  bool operator<(const Progress& o) const { return epoch != o.epoch ? epoch < o.epoch : batch < o.batch; }
  bool operator==(const Progress& o) const = default;
};

// The points of a commit at which a test may stop it (as a crash would): after the temporary
// folder is made, after each of its files, and after the rename (before older ones are pruned).
enum class CommitPoint { folder_made, checkpoint_written, history_written, state_written, renamed };

class CheckpointDir {
 public:
  // The files inside a checkpoint's folder.
  static constexpr const char* kCheckpointFile = "checkpoint.safetensors";
  static constexpr const char* kHistoryFile = "history.json";
  static constexpr const char* kStateFile = "learner.json";

  CheckpointDir(std::filesystem::path dir, std::int64_t keep);

  const std::filesystem::path& path() const { return dir_; }
  // The checkpoint folder for `at` ("epoch-0003" or "epoch-0003-batch-000120").
  std::filesystem::path folder_for(Progress at) const;
  // Writers of a checkpoint's three files, each given the path to write.
  struct Files {
    std::function<void(const std::filesystem::path&)> checkpoint, history, state;
  };
  // Writes a checkpoint for `at` as one commit: the three files into a temporary folder, which
  // then replaces any checkpoint for `at`. Returns the checkpoint file. On an error the temporary
  // folder goes and nothing changes.
  std::filesystem::path commit(Progress at, const Files& files) const;
  // The metric history and the Learner state that belong to a checkpoint file (list()'s paths);
  // an older run's checkpoint has the history beside it and no state.
  static std::filesystem::path history_for(const std::filesystem::path& checkpoint);
  static std::optional<std::filesystem::path> state_for(const std::filesystem::path& checkpoint);
  void prune() const;  // a pruned checkpoint's history and state go with it
  // Removes what interrupted writes left: temporary files and folders of processes that are gone
  // (or of this one, which is starting), and histories whose checkpoint is gone. Returns their names.
  std::vector<std::string> clean_up() const;
  // The checkpoint files present, oldest first.
  std::vector<std::pair<Progress, std::filesystem::path>> list() const;
  std::optional<std::pair<Progress, std::filesystem::path>> latest() const;

  // For tests: called at each CommitPoint of every commit (empty: nothing is called).
  static std::function<void(CommitPoint)>& commit_hook();

 private:
  std::filesystem::path dir_;
  std::int64_t keep_;
};

}  // namespace kiln::train
