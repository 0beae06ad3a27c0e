// The update of a loss-returning step: gradient accumulation equals one batch as large as the
// group (the mean loss), the last short group of an epoch included, with the schedule stepped
// once per group; clipping by norm and by value equals a hand-written loop that calls optim's
// clipping itself, bit for bit; a Learner without a schedule trains at the optimizer's own
// learning rate; a run cut by Ctrl-C in the middle of a group stops at the group's end and
// resumes bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "learner_test_support.h"
#include "support/expect_error.h"
#include "support/scratch_dir.h"

namespace kiln::train {
namespace {

using fixture::Classifier;
using fixture::make;
using fixture::Mlp;
using fixture::mlp_step;
using fixture::step;
using fixture::train_loader;
using fixture::valid_loader;
using fixture::weights;

float max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

struct Trained {
  std::vector<float> weights;
  MetricHistory history;
};

// Two epochs of SGD with momentum over the 256 shuffled points in batches of `batch_size`, the
// gradients of `accumulate` batches to a step, the learning rate halved every 2 steps.
Trained train_mlp(std::int64_t batch_size, std::int64_t accumulate) {
  manual_seed(5);
  const data::DataLoader<> loader(fixture::points(1), {.batch_size = batch_size, .shuffle = true, .seed = 3});
  Learner<Mlp> learner(Mlp{}, std::make_unique<optim::Sgd>(optim::SgdOptions{.lr = 0.2, .momentum = 0.9}),
                       std::make_unique<optim::StepLr>(0.2, 2, 0.5), mlp_step,
                       {.epochs = 2, .accumulate_grad_batches = accumulate, .dashboard = DashboardMode::off});
  learner.fit(loader);
  return {weights(learner.model()), learner.history()};
}

TEST(LearnerUpdate, AccumulatingNBatchesEqualsOneBatchNTimesAsLarge) {
  // 16 batches of 16 in groups of 4 against 4 batches of 64; then groups of 5 (5, 5, 5 and the
  // epoch's last, 1) against batches of 80 (80, 80, 80 and 16).
  for (const auto& [small, groups, large] : {std::tuple{16, 4, 64}, std::tuple{16, 5, 80}}) {
    SCOPED_TRACE("batches of " + std::to_string(small) + " in groups of " + std::to_string(groups));
    const Trained accumulated = train_mlp(small, groups), reference = train_mlp(large, 1);
    EXPECT_LT(max_difference(accumulated.weights, reference.weights), 1e-6f);  // measured: 6e-8
    // Without accumulation the small batches train to other weights: the comparison can tell.
    EXPECT_GT(max_difference(train_mlp(small, 1).weights, reference.weights), 1e-2f);
    // The schedule stepped once per group: the learning rates are the same numbers.
    const auto lr = accumulated.history.epochs("lr", Split::train), want = reference.history.epochs("lr", Split::train);
    ASSERT_EQ(lr.size(), 2u);
    ASSERT_EQ(want.size(), 2u);
    for (std::size_t e = 0; e < 2; ++e) EXPECT_EQ(lr[e].value, want[e].value) << "epoch " << e + 1;
    // The loss reported is every batch's loss (their mean over the epoch), not a scaled one.
    const auto loss = accumulated.history.epochs("loss", Split::train);
    const auto want_loss = reference.history.epochs("loss", Split::train);
    ASSERT_EQ(loss.size(), 2u);
    EXPECT_NEAR(loss[0].value, want_loss[0].value, 1e-5);
  }
}

// A loop written by hand: the step, backward, `clip`, the optimizer step and the schedule step,
// for `epochs` epochs of the fixture's loader.
std::vector<float> manual_loop(std::int64_t epochs, const std::function<void(Gradients&, const Classifier&)>& clip) {
  manual_seed(5);
  Classifier model;
  optim::Adam opt({.lr = 1e-2});
  optim::StepLr schedule(1e-2, 16, 0.5);
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch)
    for (const data::Batch& batch : train_loader().epoch(epoch)) {
      Gradients grads = backward(step(model, batch).loss);
      clip(grads, model);
      model = opt.step(schedule.lr(), std::move(model), grads);
      schedule.step();
    }
  return weights(model);
}

TEST(LearnerUpdate, ClippingEqualsALoopThatClipsItself) {
  Learner<Classifier> by_norm = make({.epochs = 2, .clip_grad_norm = 0.05});
  by_norm.fit(train_loader());
  const std::vector<float> want_norm =
      manual_loop(2, [](Gradients& g, const Classifier& m) { optim::clip_grad_norm(g, m, 0.05); });
  EXPECT_EQ(weights(by_norm.model()), want_norm);

  Learner<Classifier> by_l1 = make({.epochs = 2, .clip_grad_norm = 0.05, .clip_norm_type = 1.0});
  by_l1.fit(train_loader());
  EXPECT_EQ(weights(by_l1.model()),
            manual_loop(2, [](Gradients& g, const Classifier& m) { optim::clip_grad_norm(g, m, 0.05, 1.0); }));

  Learner<Classifier> by_value = make({.epochs = 2, .clip_grad_value = 0.01});
  by_value.fit(train_loader());
  EXPECT_EQ(weights(by_value.model()),
            manual_loop(2, [](Gradients& g, const Classifier& m) { optim::clip_grad_value(g, m, 0.01); }));

  // The clipping took effect: without it the weights are others.
  const std::vector<float> unclipped = manual_loop(2, [](Gradients&, const Classifier&) {});
  Learner<Classifier> plain = make({.epochs = 2});
  plain.fit(train_loader());
  EXPECT_EQ(weights(plain.model()), unclipped);
  EXPECT_NE(want_norm, unclipped);
  EXPECT_NE(weights(by_value.model()), unclipped);
}

TEST(LearnerUpdate, WithoutAScheduleTheOptimizersOwnLearningRateIsUsed) {
  auto adam = [] { return std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 0.02}); };
  const LearnerOptions options{.epochs = 2, .dashboard = DashboardMode::off};
  manual_seed(5);
  Learner omitted(Classifier{}, adam(), step, options);
  omitted.fit(train_loader());
  manual_seed(5);
  Learner null_schedule(Classifier{}, adam(), nullptr, step, options);
  null_schedule.fit(train_loader());
  manual_seed(5);
  Learner stated(Classifier{}, adam(), std::make_unique<optim::ConstantLr>(0.02), step, options);
  stated.fit(train_loader());

  EXPECT_EQ(weights(omitted.model()), weights(stated.model()));
  EXPECT_EQ(weights(null_schedule.model()), weights(stated.model()));
  const MetricHistory history = omitted.history();
  const auto lr = history.epochs("lr", Split::train);
  ASSERT_EQ(lr.size(), 2u);
  for (const auto& e : lr) EXPECT_EQ(e.value, 0.02);
}

TEST(LearnerUpdate, ACtrlCInAGroupStopsAtItsEndAndResumesExactly) {
  // Groups of 3 batches (3, 3, 2 an epoch), the learning rate halved every 2 steps: a schedule
  // stepped per batch, or a group cut in two, gives other weights.
  auto halving = [] { return std::make_unique<optim::StepLr>(1e-2, 2, 0.5); };
  test::ScratchDir whole_dir("whole"), cut_dir("cut");
  Learner<Classifier> whole =
      make({.epochs = 3, .checkpoint_dir = whole_dir.path(), .accumulate_grad_batches = 3}, step, halving());
  whole.fit(train_loader(), &valid_loader());

  // Call 14: epoch 2's second training batch (calls 1-8 are epoch 1's training, 9-12 its validation).
  auto calls = std::make_shared<int>(0);
  auto interrupting = [calls](const Classifier& m, const data::Batch& b) {
    if (++*calls == 14) InterruptGuard::request();
    return step(m, b);
  };
  Learner<Classifier> cut =
      make({.epochs = 3, .checkpoint_dir = cut_dir.path(), .accumulate_grad_batches = 3}, interrupting, halving());
  const FitResult stopped = cut.fit(train_loader(), &valid_loader());
  ASSERT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.stopped_at.epoch, 1);
  EXPECT_EQ(stopped.stopped_at.batch, 3);  // the group's end
  EXPECT_EQ(*calls, 15);
  ASSERT_TRUE(stopped.checkpoint.has_value());
  EXPECT_EQ(stopped.checkpoint->parent_path().filename(), "epoch-0001-batch-000003");

  Learner<Classifier> resumed =
      make({.epochs = 3, .checkpoint_dir = cut_dir.path(), .accumulate_grad_batches = 3}, step, halving());
  const FitResult r = resumed.fit(train_loader(), &valid_loader());
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(weights(resumed.model()), weights(whole.model()));
  const MetricHistory resumed_history = resumed.history(), whole_history = whole.history();
  for (const char* metric : {"loss", "accuracy", "lr"}) {
    const auto got = resumed_history.epochs(metric, Split::train), want = whole_history.epochs(metric, Split::train);
    ASSERT_EQ(got.size(), 3u) << metric;
    ASSERT_EQ(want.size(), 3u) << metric;
    for (std::size_t e = 0; e < 3; ++e) EXPECT_EQ(got[e].value, want[e].value) << metric << " epoch " << e + 1;
  }
  // 3 updates an epoch: the learning rate after epoch 3's 9 updates is 1e-2 * 0.5^4.
  EXPECT_DOUBLE_EQ(resumed_history.epochs("lr", Split::train).back().value, 1e-2 * std::pow(0.5, 4));
}

TEST(LearnerUpdate, BadUpdateOptionsAreErrors) {
  test::expect_error([] { make({.accumulate_grad_batches = 0}); }, "Learner", {"accumulate_grad_batches"});
  test::expect_error([] { make({.clip_grad_norm = 0.0}); }, "Learner", {"clip_grad_norm"});
  test::expect_error([] { make({.clip_grad_value = -1.0}); }, "Learner", {"clip_grad_value"});
}

}  // namespace
}  // namespace kiln::train
