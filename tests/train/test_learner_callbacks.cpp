// Callbacks at step and epoch boundaries: on_step_end after every training batch with its epoch,
// batch, the run's update count and whether the batch ended an update; on_epoch_end after every
// epoch with the summaries the history records; EpochEnd::stop ends the run after that epoch's
// checkpoint. A resumed run counts its steps from where it stopped.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "learner_test_support.h"
#include "support/scratch_dir.h"

namespace kiln::train {
namespace {

using fixture::make;
using fixture::train_loader;
using fixture::valid_loader;

// (epoch, batch, step, updated) of every on_step_end call.
using StepSeen = std::tuple<std::int64_t, std::int64_t, std::int64_t, bool>;

TEST(LearnerCallbacks, StepAndEpochCallbacksFireAtTheirBoundaries) {
  // 8 training batches an epoch in groups of 3 (3, 3, 2): 3 updates an epoch.
  Learner<fixture::Classifier> learner = make({.epochs = 3, .accumulate_grad_batches = 3});
  std::vector<StepSeen> steps;
  std::vector<EpochEnd> epochs;
  int loss_defined = 0;
  learner.on_step_end([&](const StepEnd& s) {
    steps.emplace_back(s.epoch, s.batch, s.step, s.updated);
    loss_defined += s.output.loss.defined();
  });
  learner.on_epoch_end([&](EpochEnd& e) { epochs.push_back(e); });
  learner.fit(train_loader(), &valid_loader());

  std::vector<StepSeen> want;
  std::int64_t step = 0;
  for (std::int64_t epoch = 1; epoch <= 3; ++epoch)
    for (std::int64_t batch = 1; batch <= 8; ++batch) {
      const bool updated = batch % 3 == 0 || batch == 8;
      step += updated;
      want.emplace_back(epoch, batch, step, updated);
    }
  EXPECT_EQ(steps, want);
  EXPECT_EQ(loss_defined, 24);

  ASSERT_EQ(epochs.size(), 3u);
  const MetricHistory h = learner.history();
  for (std::size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(epochs[e].epoch, static_cast<std::int64_t>(e + 1));
    EXPECT_EQ(epochs[e].step, static_cast<std::int64_t>(3 * (e + 1)));
    EXPECT_FALSE(epochs[e].stop);
    // The values the history records for the epoch; value() prefers validation's.
    EXPECT_EQ(epochs[e].value("accuracy"), h.epochs("accuracy", Split::valid)[e].value);
    ASSERT_TRUE(epochs[e].value("lr").has_value());  // training's only
    EXPECT_EQ(*epochs[e].value("lr"), h.epochs("lr", Split::train)[e].value);
    EXPECT_FALSE(epochs[e].value("f1").has_value());
    bool train_loss = false;
    for (const MetricValue& v : epochs[e].train)
      if (v.name == "loss") train_loss = v.value == h.epochs("loss", Split::train)[e].value;
    EXPECT_TRUE(train_loss) << "epoch " << e + 1;
  }
}

TEST(LearnerCallbacks, AnEpochCallbackStopsTheRunAfterItsCheckpoint) {
  test::ScratchDir dir("stopped");
  Learner<fixture::Classifier> learner = make({.epochs = 6, .checkpoint_dir = dir.path()});
  learner.on_epoch_end([](EpochEnd& e) { e.stop = e.epoch == 2; });
  const FitResult r = learner.fit(train_loader(), &valid_loader());
  EXPECT_TRUE(r.stopped_by_callback);
  EXPECT_FALSE(r.stopped_early);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.stopped_at.epoch, 2);
  ASSERT_TRUE(r.checkpoint.has_value());
  EXPECT_EQ(r.checkpoint->parent_path().filename(), "epoch-0002");
  EXPECT_EQ(learner.history().epochs("loss", Split::valid).size(), 2u);
}

TEST(LearnerCallbacks, AResumedRunCountsItsStepsFromTheCheckpoint) {
  test::ScratchDir dir("resumed");
  make({.epochs = 2, .checkpoint_dir = dir.path(), .accumulate_grad_batches = 3}).fit(train_loader(), &valid_loader());
  Learner<fixture::Classifier> resumed =
      make({.epochs = 3, .checkpoint_dir = dir.path(), .accumulate_grad_batches = 3});
  std::vector<StepSeen> steps;
  resumed.on_step_end([&](const StepEnd& s) { steps.emplace_back(s.epoch, s.batch, s.step, s.updated); });
  resumed.fit(train_loader(), &valid_loader());
  ASSERT_EQ(steps.size(), 8u);
  EXPECT_EQ(steps.front(), StepSeen(3, 1, 6, false));
  EXPECT_EQ(steps.back(), StepSeen(3, 8, 9, true));
}

}  // namespace
}  // namespace kiln::train
