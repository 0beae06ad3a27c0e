// The Learner's distributed hook (train/distributed.h), with a stand-in for the other ranks:
// rank 0 writes the checkpoints and the report, another rank writes none and waits at a barrier
// for each; the model is replicated once, every batch's gradients come from the hook, each
// training epoch is announced, and the epoch's metrics are the hook's mean (here the mean with a
// rank that reported 1.0). dist/'s tests run the real thing with several processes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "learner_test_support.h"
#include "support/scratch_dir.h"

namespace kiln::train {
namespace {

using fixture::Classifier;
using fixture::make;
using fixture::train_loader;
using fixture::valid_loader;

struct StandInRank final : DistributedTraining {
  explicit StandInRank(int r) : r(r) {}
  int rank() const override { return r; }
  int world_size() const override { return 2; }
  void replicate(nn::Module&) override { ++replicated; }
  Gradients backward(const nn::Module&, const Tensor& loss) override {
    ++backwards;
    return kiln::backward(loss);
  }
  void begin_epoch(std::int64_t epoch) override { epochs.push_back(epoch); }
  double mean(double value) override { return (value + 1.0) / 2; }
  double sum(double value) override { return 2 * value; }
  bool any(bool value) override {
    ++agreements;
    return value;
  }
  void barrier() override { ++barriers; }

  int r;
  int replicated = 0, backwards = 0, barriers = 0, agreements = 0;
  std::vector<std::int64_t> epochs;
};

// The same run on one process, stepping eagerly as a distributed run does.
MetricHistory plain_history() {
  Learner<Classifier> plain = make({.epochs = 2, .record_steps = false});
  plain.fit(train_loader(), &valid_loader());
  return plain.history();
}

void expect_mean_with_one(const MetricHistory& got, const MetricHistory& plain, Split split) {
  const auto g = got.epochs("loss", split), p = plain.epochs("loss", split);
  ASSERT_EQ(g.size(), p.size());
  for (std::size_t e = 0; e < g.size(); ++e) EXPECT_NEAR(g[e].value, (p[e].value + 1.0) / 2, 1e-6) << "epoch " << e;
}

TEST(LearnerDistributed, AnotherRankWritesNothingAndWaitsForEachCheckpoint) {
  test::ScratchDir dir("rank1");
  auto hook = std::make_shared<StandInRank>(1);
  Learner<Classifier> learner = make(
      {.epochs = 2, .checkpoint_dir = dir.path() / "ckpt", .report = dir.path() / "report.html", .distributed = hook});
  const FitResult r = learner.fit(train_loader(), &valid_loader());
  EXPECT_EQ(r.stopped_at.epoch, 2);
  EXPECT_TRUE(CheckpointDir(dir.path() / "ckpt", 2).list().empty());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "report.html"));
  EXPECT_FALSE(r.report.has_value());
  EXPECT_EQ(hook->replicated, 1);
  EXPECT_EQ(hook->backwards, 16);  // 8 batches an epoch: every one through the hook, none recorded
  EXPECT_EQ(hook->epochs, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(hook->barriers, 3);     // before reading the checkpoint folder, and after each epoch's checkpoint
  EXPECT_GE(hook->agreements, 16);  // whether to stop, after every update
  const MetricHistory plain = plain_history();
  expect_mean_with_one(learner.history(), plain, Split::train);
  expect_mean_with_one(learner.history(), plain, Split::valid);
}

TEST(LearnerDistributed, RankZeroWritesTheCheckpointsAndTheReport) {
  test::ScratchDir dir("rank0");
  auto hook = std::make_shared<StandInRank>(0);
  Learner<Classifier> learner = make(
      {.epochs = 2, .checkpoint_dir = dir.path() / "ckpt", .report = dir.path() / "report.html", .distributed = hook});
  const FitResult r = learner.fit(train_loader(), &valid_loader());
  EXPECT_EQ(CheckpointDir(dir.path() / "ckpt", 2).list().size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "report.html"));
  EXPECT_TRUE(r.report.has_value());
  EXPECT_EQ(hook->barriers, 3);
}

}  // namespace
}  // namespace kiln::train
