// The Learner end to end on a small synthetic task (which of 3 regions a 2-D point is in): the
// loss falls and the accuracy rises; a run stopped after 2 epochs and resumed from its
// checkpoint ends with the weights of a run that never stopped, bit for bit; a Ctrl-C (requested
// from inside a step) stops after that step with a checkpoint that resumes exactly too; early
// stopping stops when the watched metric stalls; the report is written.
#include <gtest/gtest.h>

#include <filesystem>

#include "learner_test_support.h"
#include "support/expect_error.h"
#include "support/scratch_dir.h"

namespace kiln::train {
namespace {

using fixture::Classifier;
using fixture::make;
using fixture::step;
using fixture::train_loader;
using fixture::valid_loader;
using fixture::weights;

TEST(Learner, LossFallsAndAccuracyRises) {
  test::ScratchDir dir("run");
  Learner<Classifier> learner = make({.epochs = 6, .report = dir.path() / "report.html"});
  const FitResult r = learner.fit(train_loader(), &valid_loader());
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.stopped_at.epoch, 6);
  const MetricHistory h = learner.history();
  const auto loss = h.epochs("loss", Split::valid);
  const auto acc = h.epochs("accuracy", Split::valid);
  ASSERT_EQ(loss.size(), 6u);
  ASSERT_EQ(acc.size(), 6u);
  EXPECT_LT(loss.back().value, 0.7 * loss.front().value);
  EXPECT_GT(acc.back().value, acc.front().value);
  EXPECT_GT(acc.back().value, 0.75);
  ASSERT_TRUE(r.report.has_value());
  EXPECT_TRUE(std::filesystem::exists(*r.report));
}

TEST(Learner, ResumeFromACheckpointEqualsAnUninterruptedRun) {
  test::ScratchDir whole_dir("whole"), split_dir("split");
  Learner<Classifier> whole = make({.epochs = 4, .checkpoint_dir = whole_dir.path()});
  whole.fit(train_loader(), &valid_loader());

  Learner<Classifier> first = make({.epochs = 2, .checkpoint_dir = split_dir.path()});
  first.fit(train_loader(), &valid_loader());
  Learner<Classifier> second = make({.epochs = 4, .checkpoint_dir = split_dir.path()});
  const FitResult r = second.fit(train_loader(), &valid_loader());
  EXPECT_EQ(r.stopped_at.epoch, 4);
  EXPECT_EQ(weights(second.model()), weights(whole.model()));
  // Two checkpoints kept (epochs 3 and 4), each a folder with its history and Learner state, and
  // nothing else.
  const auto kept = CheckpointDir(split_dir.path(), 2).list();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].second, split_dir.path() / "epoch-0003" / "checkpoint.safetensors");
  EXPECT_EQ(kept[1].second, split_dir.path() / "epoch-0004" / "checkpoint.safetensors");
  for (const auto& [at, file] : kept) {
    EXPECT_TRUE(std::filesystem::exists(CheckpointDir::history_for(file))) << file;
    EXPECT_TRUE(std::filesystem::exists(*CheckpointDir::state_for(file))) << file;
    const std::filesystem::directory_iterator files(file.parent_path());
    EXPECT_EQ(std::distance(files, std::filesystem::directory_iterator()), 3);
  }
  const std::filesystem::directory_iterator entries(split_dir.path());
  EXPECT_EQ(std::distance(entries, std::filesystem::directory_iterator()), 2);
  // The resumed run's history holds the whole run: the epochs before the resume too.
  const MetricHistory second_history = second.history(), whole_history = whole.history();
  for (const char* metric : {"loss", "accuracy"}) {
    const auto resumed = second_history.epochs(metric, Split::valid);
    const auto uninterrupted = whole_history.epochs(metric, Split::valid);
    ASSERT_EQ(resumed.size(), 4u) << metric;
    ASSERT_EQ(uninterrupted.size(), 4u) << metric;
    for (std::size_t e = 0; e < 4; ++e) {
      EXPECT_EQ(resumed[e].epoch, uninterrupted[e].epoch) << metric;
      EXPECT_EQ(resumed[e].value, uninterrupted[e].value) << metric << " epoch " << e + 1;
    }
  }
}

TEST(Learner, CtrlCStopsAfterTheStepWithACheckpointThatResumesExactly) {
  test::ScratchDir whole_dir("whole"), cut_dir("cut");
  Learner<Classifier> whole = make({.epochs = 3, .checkpoint_dir = whole_dir.path()});
  whole.fit(train_loader(), &valid_loader());

  // 8 training batches an epoch, then 4 of validation: call 15 is epoch 2's third training step.
  // Its step counts its calls: it steps eagerly (a recorded step calls it once).
  int calls = 0;
  Learner<Classifier> cut = make({.epochs = 3, .checkpoint_dir = cut_dir.path(), .record_steps = false},
                                 [&](const Classifier& m, const data::Batch& b) {
    if (++calls == 15) InterruptGuard::request();  // as if Ctrl-C came during that step
    return step(m, b);
  });
  const FitResult stopped = cut.fit(train_loader(), &valid_loader());
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.stopped_at.epoch, 1);
  EXPECT_EQ(stopped.stopped_at.batch, 3);
  ASSERT_TRUE(stopped.checkpoint.has_value());
  EXPECT_EQ(stopped.checkpoint->parent_path().filename(), "epoch-0001-batch-000003");

  Learner<Classifier> resumed = make({.epochs = 3, .checkpoint_dir = cut_dir.path()});
  const FitResult r = resumed.fit(train_loader(), &valid_loader());
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(weights(resumed.model()), weights(whole.model()));
}

TEST(Learner, EarlyStoppingStopsWhenTheMetricStalls) {
  // A learning rate of 0: nothing improves after the first epoch.
  manual_seed(5);
  Learner<Classifier> learner(Classifier{}, std::make_unique<optim::Sgd>(optim::SgdOptions{.lr = 0.0}),
                              std::make_unique<optim::ConstantLr>(0.0), step,
                              {.epochs = 20, .early_stopping = EarlyStopping{.metric = "loss", .patience = 2},
                               .dashboard = DashboardMode::off});
  const FitResult r = learner.fit(train_loader(), &valid_loader());
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.stopped_at.epoch, 3);  // epoch 1 sets the best; epochs 2 and 3 do not beat it
}

TEST(Learner, BadOptionsAreErrors) {
  test::expect_error([] { make({.epochs = 0}); }, "Learner", {"epochs"});
  test::expect_error(
      [] {
        Learner<Classifier> l(Classifier{}, std::make_unique<optim::Sgd>(), std::make_unique<optim::ReduceLrOnPlateau>(0.1),
                              step, {.dashboard = DashboardMode::off});
      },
      "Learner", {"schedule_per_batch"});
  Learner<Classifier> watching = make({.epochs = 1, .early_stopping = EarlyStopping{.metric = "f1"}});
  test::expect_error([&] { watching.fit(train_loader(), &valid_loader()); }, "Learner", {"f1"});
}

}  // namespace
}  // namespace kiln::train
