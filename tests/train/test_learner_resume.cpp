// Exact resume in every setting: each case stops a run (ends it, presses Ctrl-C from inside a
// step, or kills a child process in the middle of writing a checkpoint), resumes it, and compares
// the final weights bit for bit, and the metric history, with a run that never stopped.
//
// - early stopping's best value and patience count survive a resume;
// - a per-epoch schedule steps once for an epoch whose validation a Ctrl-C cut short;
// - an epoch resumed in its middle reports the whole epoch's training values, and its progress
//   goes on from the batch it resumed at;
// - a process killed at any point of a checkpoint's commit leaves the previous checkpoint whole,
//   and the next run cleans up and resumes exactly;
// - a damaged newest checkpoint falls back to the one before it, with a warning naming both;
// - an older run's checkpoint files (no folder) are still read.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "learner_test_support.h"
#include "support/child_test.h"
#include "support/expect_error.h"
#include "support/scratch_dir.h"
#include "kiln/train/metric_history_file.h"

namespace kiln::train {
namespace {

namespace fs = std::filesystem;
using fixture::Classifier;
using fixture::make;
using fixture::step;
using fixture::train_loader;
using fixture::valid_loader;
using fixture::weights;

// The epoch summaries of `metric` on `split` in two histories are the same numbers, bit for bit.
void expect_same_epochs(const MetricHistory& got, const MetricHistory& want, const char* metric, Split split) {
  const auto a = got.epochs(metric, split), b = want.epochs(metric, split);
  ASSERT_EQ(a.size(), b.size()) << metric << " " << split_name(split);
  ASSERT_FALSE(b.empty()) << metric << " " << split_name(split);
  for (std::size_t e = 0; e < a.size(); ++e) {
    EXPECT_EQ(a[e].epoch, b[e].epoch) << metric;
    EXPECT_EQ(a[e].value, b[e].value) << split_name(split) << " " << metric << " epoch " << b[e].epoch;
  }
}

void expect_same_history(const MetricHistory& got, const MetricHistory& want) {
  for (const char* metric : {"loss", "accuracy"})
    for (Split split : kSplits) expect_same_epochs(got, want, metric, split);
  expect_same_epochs(got, want, "lr", Split::train);
}

// A step that requests a Ctrl-C on its `at`-th call (training and validation steps both count).
Learner<Classifier>::Step interrupting_step(int at) {
  auto calls = std::make_shared<int>(0);
  return [calls, at](const Classifier& m, const data::Batch& b) {
    if (++*calls == at) InterruptGuard::request();
    return step(m, b);
  };
}

int entries_in(const fs::path& dir) {
  return static_cast<int>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// Everything written to std::cout while it lives (the dashboard's plain lines).
class CaptureCout {
 public:
  CaptureCout() : old_(std::cout.rdbuf(text_.rdbuf())) {}
  ~CaptureCout() { std::cout.rdbuf(old_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};

TEST(LearnerResume, EarlyStoppingKeepsItsBestValueAndPatienceAcrossAResume) {
  // The learning rate falls to nothing after 6 epochs (48 steps): the validation loss stops
  // improving there, and patience 3 stops the run three epochs after its best.
  auto options = [](const fs::path& dir, std::int64_t epochs) {
    return LearnerOptions{
        .epochs = epochs, .checkpoint_dir = dir, .early_stopping = EarlyStopping{.metric = "loss", .patience = 3}};
  };
  auto vanishing_lr = [] { return std::make_unique<optim::StepLr>(1e-2, 48, 1e-30); };
  test::ScratchDir whole_dir("whole"), split_dir("split");
  Learner<Classifier> whole = make(options(whole_dir.path(), 20), step, vanishing_lr());
  const FitResult w = whole.fit(train_loader(), &valid_loader());
  ASSERT_TRUE(w.stopped_early);
  // Stopped after epoch 7: a run resumed there without the patience count would go on longer.
  ASSERT_GT(w.stopped_at.epoch, 7) << "the task no longer stalls late enough to test the resume";

  Learner<Classifier> first = make(options(split_dir.path(), 7), step, vanishing_lr());
  ASSERT_FALSE(first.fit(train_loader(), &valid_loader()).stopped_early);
  Learner<Classifier> second = make(options(split_dir.path(), 20), step, vanishing_lr());
  const FitResult r = second.fit(train_loader(), &valid_loader());
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.stopped_at.epoch, w.stopped_at.epoch);
  EXPECT_EQ(weights(second.model()), weights(whole.model()));
  expect_same_history(second.history(), whole.history());
}

TEST(LearnerResume, APerEpochScheduleStepsOnceForAnEpochWhoseValidationWasCutShort) {
  // Halved after every epoch; 8 training steps and 4 validation steps an epoch.
  auto per_epoch = [] { return std::make_unique<optim::StepLr>(1e-2, 1, 0.5); };
  const LearnerOptions options{.epochs = 4, .schedule_per_batch = false};
  test::ScratchDir whole_dir("whole"), cut_dir("cut");
  LearnerOptions whole_options = options, cut_options = options;
  whole_options.checkpoint_dir = whole_dir.path();
  cut_options.checkpoint_dir = cut_dir.path();
  Learner<Classifier> whole = make(whole_options, step, per_epoch());
  whole.fit(train_loader(), &valid_loader());

  // Call 22: epoch 2's second validation step (calls 1-12 are epoch 1, 13-20 epoch 2's training).
  // A step that counts its calls steps eagerly (a recorded step calls it once).
  cut_options.record_steps = false;
  Learner<Classifier> cut = make(cut_options, interrupting_step(22), per_epoch());
  const FitResult stopped = cut.fit(train_loader(), &valid_loader());
  ASSERT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.stopped_at.epoch, 1);
  EXPECT_EQ(stopped.stopped_at.batch, 8);  // epoch 2's training done, its validation to run again
  ASSERT_TRUE(stopped.checkpoint.has_value());
  EXPECT_EQ(stopped.checkpoint->parent_path().filename(), "epoch-0001-batch-000008");
  // The half validation is not recorded as epoch 2's.
  EXPECT_EQ(cut.history().epochs("loss", Split::valid).size(), 1u);
  EXPECT_EQ(load_history(CheckpointDir::history_for(*stopped.checkpoint)).epochs("loss", Split::valid).size(), 1u);

  Learner<Classifier> resumed = make(cut_options, step, per_epoch());
  const FitResult r = resumed.fit(train_loader(), &valid_loader());
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(weights(resumed.model()), weights(whole.model()));
  expect_same_history(resumed.history(), whole.history());
}

TEST(LearnerResume, AnEpochResumedInItsMiddleReportsTheWholeEpoch) {
  test::ScratchDir whole_dir("whole"), cut_dir("cut");
  Learner<Classifier> whole = make({.epochs = 3, .checkpoint_dir = whole_dir.path()});
  whole.fit(train_loader(), &valid_loader());

  // Call 15: epoch 2's third training step.
  Learner<Classifier> cut = make({.epochs = 3, .checkpoint_dir = cut_dir.path(), .record_steps = false}, interrupting_step(15));
  const FitResult stopped = cut.fit(train_loader(), &valid_loader());
  ASSERT_TRUE(stopped.interrupted);
  ASSERT_EQ(stopped.stopped_at.batch, 3);

  std::string shown;
  Learner<Classifier> resumed =
      make({.epochs = 3, .checkpoint_dir = cut_dir.path(), .dashboard = DashboardMode::plain});
  {
    const CaptureCout capture;
    resumed.fit(train_loader(), &valid_loader());
    shown = capture.text();
  }
  EXPECT_EQ(weights(resumed.model()), weights(whole.model()));
  // Epoch 2's training loss and accuracy cover its 8 batches, not the 5 after the resume.
  expect_same_history(resumed.history(), whole.history());
  // Its progress went on from batch 3: the phase ended at 8 batches, and the curve has a point there.
  const std::size_t line = shown.find("epoch 2/3 train ");
  ASSERT_NE(line, std::string::npos) << shown;
  const std::string summary = shown.substr(line, shown.find('\n', line) - line);
  EXPECT_NE(summary.find("[8 batches in"), std::string::npos) << summary;
  bool point_at_resume = false;
  const MetricHistory history = resumed.history();  // points() is a view into it
  for (const MetricPoint& p : history.points("loss", Split::train)) point_at_resume |= p.x == 1.375;
  EXPECT_TRUE(point_at_resume);
}

// --- A process killed in the middle of a checkpoint's commit --------------------------------

constexpr const char* kKillDir = "KILN_TEST_COMMIT_KILL_DIR";
constexpr const char* kKillPoint = "KILN_TEST_COMMIT_KILL_POINT";
constexpr int kKilledStatus = 42;
constexpr int kKilledCommit = 3;  // epoch 3's checkpoint

// The child: a 4-epoch run that dies (as if killed: no clean-up, no destructors) at the given
// point of its third checkpoint.
TEST(LearnerResumeChild, DISABLED_DiesWhileWritingACheckpoint) {
  const char* dir = std::getenv(kKillDir);
  const char* point = std::getenv(kKillPoint);
  ASSERT_TRUE(dir && point) << "started by LearnerResume.AKillAtAnyPointOfACommitResumesExactly only";
  const auto dies_at = static_cast<CommitPoint>(std::atoi(point));
  int commits = 0;
  CheckpointDir::commit_hook() = [&](CommitPoint p) {
    if (p == CommitPoint::folder_made) ++commits;
    if (commits == kKilledCommit && p == dies_at) ::_exit(kKilledStatus);
  };
  make({.epochs = 4, .checkpoint_dir = dir}).fit(train_loader(), &valid_loader());
  std::exit(0);  // the parent sees 0: the hook never fired
}

TEST(LearnerResume, AKillAtAnyPointOfACommitResumesExactly) {
  test::ScratchDir whole_dir("whole");
  Learner<Classifier> whole = make({.epochs = 4, .checkpoint_dir = whole_dir.path()});
  whole.fit(train_loader(), &valid_loader());

  for (CommitPoint point : {CommitPoint::folder_made, CommitPoint::checkpoint_written, CommitPoint::history_written,
                            CommitPoint::state_written, CommitPoint::renamed}) {
    SCOPED_TRACE("killed at commit point " + std::to_string(static_cast<int>(point)));
    test::ScratchDir dir("killed");
    const pid_t child = test::spawn_child_test(
        "LearnerResumeChild.DISABLED_DiesWhileWritingACheckpoint",
        {{kKillDir, dir.path().string()}, {kKillPoint, std::to_string(static_cast<int>(point))}});
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kKilledStatus) << "status " << status;

    // Before the rename: epoch 2's checkpoint is the newest, and the half-written folder is left.
    // After it: epoch 3's is whole (and epoch 1's not yet pruned).
    const bool renamed = point == CommitPoint::renamed;
    const auto left = CheckpointDir(dir.path(), 2).latest();
    ASSERT_TRUE(left.has_value());
    EXPECT_EQ(left->first.epoch, renamed ? 3 : 2);
    bool temporary_left = false;
    for (const auto& e : fs::directory_iterator(dir.path()))
      temporary_left |= e.path().filename().string().rfind(".epoch-0003.tmp-", 0) == 0;
    EXPECT_EQ(temporary_left, !renamed);

    Learner<Classifier> resumed = make({.epochs = 4, .checkpoint_dir = dir.path()});
    const FitResult r = resumed.fit(train_loader(), &valid_loader());
    EXPECT_FALSE(r.interrupted);
    EXPECT_EQ(weights(resumed.model()), weights(whole.model()));
    expect_same_history(resumed.history(), whole.history());
    // Cleaned up and pruned: the two newest checkpoints and nothing else.
    EXPECT_EQ(entries_in(dir.path()), 2);
    EXPECT_TRUE(fs::is_directory(dir.path() / "epoch-0003"));
    EXPECT_TRUE(fs::is_directory(dir.path() / "epoch-0004"));
  }
}

// --- Damaged checkpoints, leftovers and older runs -------------------------------------------

TEST(LearnerResume, ADamagedNewestCheckpointFallsBackToThePreviousOne) {
  test::ScratchDir whole_dir("whole");
  Learner<Classifier> whole = make({.epochs = 4, .checkpoint_dir = whole_dir.path()});
  whole.fit(train_loader(), &valid_loader());

  // Damaged three ways: the weights cut short, the Learner state not JSON, the history not JSON.
  for (const char* damaged : {"checkpoint.safetensors", "learner.json", "history.json"}) {
    SCOPED_TRACE(damaged);
    test::ScratchDir dir("damaged");
    make({.epochs = 3, .checkpoint_dir = dir.path()}).fit(train_loader(), &valid_loader());
    const fs::path file = dir.path() / "epoch-0003" / damaged;
    ASSERT_TRUE(fs::exists(file));
    if (std::string(damaged) == "checkpoint.safetensors")
      fs::resize_file(file, fs::file_size(file) / 2);
    else
      std::ofstream(file) << "{\"metrics\": [";

    std::string shown;
    Learner<Classifier> resumed = make({.epochs = 4, .checkpoint_dir = dir.path(), .dashboard = DashboardMode::plain});
    {
      const CaptureCout capture;
      resumed.fit(train_loader(), &valid_loader());
      shown = capture.text();
    }
    // Resumed from epoch 2: epochs 3 and 4 trained again, as the uninterrupted run did.
    EXPECT_EQ(weights(resumed.model()), weights(whole.model()));
    expect_same_history(resumed.history(), whole.history());
    const std::string newest = (dir.path() / "epoch-0003" / "checkpoint.safetensors").string();
    const std::string previous = (dir.path() / "epoch-0002" / "checkpoint.safetensors").string();
    const std::size_t warning = shown.find("warning: checkpoint " + newest);
    ASSERT_NE(warning, std::string::npos) << shown;
    EXPECT_NE(shown.find("resuming from " + previous, warning), std::string::npos) << shown;
  }
}

TEST(LearnerResume, NoReadableCheckpointIsAnError) {
  test::ScratchDir dir("damaged");
  make({.epochs = 1, .checkpoint_dir = dir.path()}).fit(train_loader(), &valid_loader());
  std::ofstream(dir.path() / "epoch-0001" / "learner.json") << "not json";
  Learner<Classifier> resumed = make({.epochs = 2, .checkpoint_dir = dir.path()});
  test::expect_error([&] { resumed.fit(train_loader(), &valid_loader()); }, "Learner", {"epoch-0001", "can be read"});
}

TEST(LearnerResume, CleanUpRemovesWhatInterruptedWritesLeft) {
  test::ScratchDir scratch("leftovers");
  const fs::path& dir = scratch.path();
  // A process that is gone: a child that exits at once, waited for.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  const std::string dead = std::to_string(gone), self = std::to_string(::getpid()), alive = std::to_string(::getppid());

  auto touch = [&](const std::string& name) { std::ofstream(dir / name) << "x"; };
  touch(".epoch-0003.safetensors.tmp-" + dead + "-0");  // an older run's checkpoint file, half written
  touch("epoch-0002.history.json.tmp");                 // an older run's history, half written
  touch("epoch-0001.history.json");                     // an older run's history without its checkpoint
  touch("epoch-0002.safetensors");                      // an older run's checkpoint with its history: kept
  touch("epoch-0002.history.json");
  fs::create_directory(dir / (".epoch-0004.tmp-" + self + "-7"));  // a commit of this process, cut off
  touch(".epoch-0004.tmp-" + self + "-7/checkpoint.safetensors");
  fs::create_directory(dir / (".epoch-0005.tmp-" + alive + "-1"));  // another live process's: kept
  fs::create_directory(dir / "epoch-0003");
  touch("epoch-0003/checkpoint.safetensors");

  const CheckpointDir checkpoints(dir, 2);
  const std::vector<std::string> removed = checkpoints.clean_up();
  const std::vector<std::string> expected{".epoch-0003.safetensors.tmp-" + dead + "-0",
                                          ".epoch-0004.tmp-" + self + "-7", "epoch-0001.history.json",
                                          "epoch-0002.history.json.tmp"};
  EXPECT_EQ(removed, expected);
  EXPECT_EQ(entries_in(dir), 4);
  EXPECT_TRUE(fs::exists(dir / "epoch-0002.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "epoch-0002.history.json"));
  EXPECT_TRUE(fs::exists(dir / (".epoch-0005.tmp-" + alive + "-1")));
  // Both layouts are listed, oldest first.
  const auto listed = checkpoints.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].second, dir / "epoch-0002.safetensors");
  EXPECT_EQ(listed[1].second, dir / "epoch-0003" / "checkpoint.safetensors");
  EXPECT_TRUE(checkpoints.clean_up().empty());
}

TEST(LearnerResume, AnOlderRunsCheckpointFilesAreStillRead) {
  test::ScratchDir whole_dir("whole"), old_dir("old");
  Learner<Classifier> whole = make({.epochs = 4, .checkpoint_dir = whole_dir.path()});
  whole.fit(train_loader(), &valid_loader());
  // The layout before checkpoint folders: epoch-0002.safetensors with its history beside it.
  test::ScratchDir first_dir("first");
  make({.epochs = 2, .checkpoint_dir = first_dir.path()}).fit(train_loader(), &valid_loader());
  fs::copy_file(first_dir.path() / "epoch-0002" / "checkpoint.safetensors", old_dir.path() / "epoch-0002.safetensors");
  fs::copy_file(first_dir.path() / "epoch-0002" / "history.json", old_dir.path() / "epoch-0002.history.json");

  Learner<Classifier> resumed = make({.epochs = 4, .checkpoint_dir = old_dir.path()});
  const FitResult r = resumed.fit(train_loader(), &valid_loader());
  EXPECT_EQ(r.stopped_at.epoch, 4);
  EXPECT_EQ(weights(resumed.model()), weights(whole.model()));
  expect_same_history(resumed.history(), whole.history());
  // Pruned with the new ones: the older file and its history went together.
  EXPECT_EQ(entries_in(old_dir.path()), 2);
}

}  // namespace
}  // namespace kiln::train
