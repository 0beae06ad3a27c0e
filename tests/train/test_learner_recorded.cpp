// The Learner's recorded steps (LearnerOptions::record_steps): a loss-returning step without
// accumulation is recorded once per batch shape and replayed as one message a batch, and trains
// to the same weights, losses and metrics as eager steps, bit for bit: with a schedule, with
// clipping, with dropout, with the epoch's last, shorter batch, and across a resume from a
// checkpoint. Steps with accumulation run eagerly.
#include <gtest/gtest.h>

#include "learner_test_support.h"
#include "support/reference.h"
#include "support/scratch_dir.h"

namespace kiln::train {
namespace {

using fixture::Mlp;
using fixture::mlp_step;

std::vector<std::uint32_t> bits(const Mlp& m) { return test::float_bits(fixture::weights(m)); }

struct TrainedRun {
  std::vector<std::uint32_t> weights;
  std::vector<double> losses, accuracies;
  std::uint64_t replays = 0;
};

// 256 points in batches of 48 (five, and a last one of 16): `epochs` epochs of SGD with momentum
// and weight decay at a cosine schedule, or of AdamW.
TrainedRun train(LearnerOptions options, bool adamw = false, std::int64_t epochs = 3) {
  manual_seed(5);
  const data::DataLoader<> loader(fixture::points(1), {.batch_size = 48, .shuffle = true, .seed = 3});
  std::unique_ptr<optim::Optimizer> opt;
  if (adamw) opt = std::make_unique<optim::AdamW>(optim::AdamWOptions{.lr = 1e-2, .weight_decay = 0.05});
  else opt = std::make_unique<optim::Sgd>(optim::SgdOptions{.lr = 0.2, .momentum = 0.9, .weight_decay = 1e-3});
  options.epochs = epochs;
  options.dashboard = DashboardMode::off;
  Learner<Mlp> learner(Mlp{}, std::move(opt), std::make_unique<optim::CosineAnnealingLr>(adamw ? 1e-2 : 0.2, 18),
                       mlp_step, options);
  learner.add_metric(accuracy());
  const std::uint64_t before = counters().passes_replayed;
  learner.fit(loader, &fixture::valid_loader());
  TrainedRun r;
  r.replays = counters().passes_replayed - before;
  r.weights = bits(learner.model());
  const MetricHistory history = learner.history();  // epochs() answers a view into it
  for (const auto& e : history.epochs("loss", Split::train)) r.losses.push_back(e.value);
  for (const auto& e : history.epochs("accuracy", Split::valid)) r.accuracies.push_back(e.value);
  return r;
}

void expect_same(const TrainedRun& recorded, const TrainedRun& eager) {
  EXPECT_EQ(recorded.weights, eager.weights);
  EXPECT_EQ(recorded.losses, eager.losses);
  EXPECT_EQ(recorded.accuracies, eager.accuracies);
}

TEST(LearnerRecorded, RecordedStepsTrainAsEagerStepsBitForBit) {
  for (bool adamw : {false, true}) {
    SCOPED_TRACE(adamw ? "AdamW" : "SGD");
    const TrainedRun eager = train({.record_steps = false}, adamw);
    const TrainedRun recorded = train({}, adamw);
    expect_same(recorded, eager);
    EXPECT_EQ(eager.replays, 0u);
    EXPECT_EQ(recorded.replays, 3u * 6u);  // every training batch of the 3 epochs
  }
}

TEST(LearnerRecorded, ClippedStepsAreRecordedToo) {
  const TrainedRun eager = train({.clip_grad_norm = 0.5, .clip_grad_value = 0.05, .record_steps = false});
  const TrainedRun recorded = train({.clip_grad_norm = 0.5, .clip_grad_value = 0.05});
  expect_same(recorded, eager);
  EXPECT_EQ(recorded.replays, 18u);
}

TEST(LearnerRecorded, AccumulatedStepsRunEagerly) { EXPECT_EQ(train({.accumulate_grad_batches = 2}).replays, 0u); }

TEST(LearnerRecorded, DropoutMasksOfRecordedStepsAreTheEagerOnes) {
  // The fixture's classifier holds a Dropout: each replay draws the mask of its own call.
  Learner<fixture::Classifier> eager = fixture::make({.epochs = 2, .record_steps = false});
  eager.fit(fixture::train_loader());
  Learner<fixture::Classifier> recorded = fixture::make({.epochs = 2});
  const std::uint64_t before = counters().passes_replayed;
  recorded.fit(fixture::train_loader());
  EXPECT_EQ(counters().passes_replayed - before, 16u);
  EXPECT_EQ(fixture::weights(recorded.model()), fixture::weights(eager.model()));
  EXPECT_EQ(nn::random_draws_by_path(recorded.model()), nn::random_draws_by_path(eager.model()));
}

TEST(LearnerRecorded, AResumedRunOfRecordedStepsEqualsAnUninterruptedOne) {
  test::ScratchDir dir;
  const TrainedRun whole = train({}, true, 3);
  (void)train({.checkpoint_dir = dir.path()}, true, 2);
  const TrainedRun resumed = train({.checkpoint_dir = dir.path()}, true, 3);
  EXPECT_EQ(resumed.weights, whole.weights);
  EXPECT_EQ(resumed.replays, 6u);  // the third epoch only
}

}  // namespace
}  // namespace kiln::train
