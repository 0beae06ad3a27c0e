// RecordedStep: a training step (forward, backward, the optimizer's update) recorded once and
// replayed as one message. Over 20 steps at the learning rates of a cosine schedule, a replayed
// step gives what the eager step gives, bit for bit: the losses, the parameters, batch norm's
// running statistics and the optimizer's moments and counts (SGD with momentum and weight decay,
// Adam, AdamW; an MLP and a small CNN). A replay is one message and updates in place; what
// cannot be recorded is an error from record(); two models step on two threads at once.
#include <gtest/gtest.h>

#include <thread>

#include "optim/recorded_step_support.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

using test::StepCnn;
using test::StepMlp;

constexpr int kStepCount = 20;

std::vector<test::StepBatch> mlp_batches() { return test::step_batches(kStepCount, 6, {8}, 4, Device::cpu()); }
std::vector<test::StepBatch> cnn_batches() { return test::step_batches(kStepCount, 4, {2, 5, 5}, 3, Device::cpu()); }

TEST(RecordedStep, MlpWithSgdMomentumAndWeightDecayStepsAsTheEagerStepBitForBit) {
  manual_seed(1);
  const StepMlp model;
  const auto batches = mlp_batches();
  std::int64_t recordings = 0;
  const test::StepRun recorded = test::recorded_run(model.clone(), test::sgd_momentum_wd(), 0.1, batches, &recordings);
  test::expect_same_run(test::eager_run(model.clone(), test::sgd_momentum_wd(), 0.1, batches), recorded);
  // The momentum buffer is the first gradient: the first step is recorded as it is, the second
  // as every later one.
  EXPECT_EQ(recordings, 2);
}

TEST(RecordedStep, MlpWithAdamAndAdamWStepsAsTheEagerStepBitForBit) {
  manual_seed(2);
  const StepMlp model;
  const auto batches = mlp_batches();
  for (const test::MakeOptimizer& make : {test::adam(), test::adamw()}) {
    test::expect_same_run(test::eager_run(model.clone(), make, 1e-2, batches),
                          test::recorded_run(model.clone(), make, 1e-2, batches));
  }
}

TEST(RecordedStep, CnnWithBatchNormStepsAsTheEagerStepBitForBit) {
  manual_seed(3);
  const StepCnn model;
  const auto batches = cnn_batches();
  for (const test::MakeOptimizer& make : {test::sgd_momentum_wd(), test::adam()}) {
    const test::StepRun eager = test::eager_run(model.clone(), make, 1e-2, batches);
    test::expect_same_run(eager, test::recorded_run(model.clone(), make, 1e-2, batches));
    // The running statistics moved (state_dict: conv.weight, conv.bias, bn.weight, bn.bias,
    // bn.running_mean, ...), and num_batches_tracked counted every step.
    const test::StepRun untrained = test::finish_run(model, *make(), {});
    EXPECT_NE(eager.state[4], untrained.state[4]);
    EXPECT_EQ(eager.state[6], std::vector<std::uint32_t>{kStepCount});
  }
}

// Dropout draws a new mask at every replay: the one an eager step draws.
struct DroppedMlp : nn::Module {
  nn::Linear fc1{8, 16}, fc2{16, 4};
  nn::Dropout drop;
  DroppedMlp() : drop(dropout_options()) {}
  static nn::DropoutOptions dropout_options() {
    nn::DropoutOptions o;
    o.p = 0.25;
    o.seed = 3;
    return o;
  }
  Tensor forward(const Tensor& x) const { return fc2(drop(relu(fc1(x)))); }
  KILN_MODULE(DroppedMlp, fc1, fc2, drop)
};

TEST(RecordedStep, DropoutMasksAreTheEagerStepsOnes) {
  // Two models built alike, each with a call count of its own (copies of a module share theirs).
  const auto fresh = [] {
    manual_seed(9);
    return DroppedMlp{};
  };
  const auto batches = mlp_batches();
  for (const test::MakeOptimizer& make : {test::sgd_momentum_wd(), test::adamw()})
    test::expect_same_run(test::eager_run(fresh(), make, 1e-2, batches), test::recorded_run(fresh(), make, 1e-2, batches));
  // Its call count moved as an eager run's (a checkpoint saves it).
  const DroppedMlp recorded = fresh();
  (void)test::recorded_run(recorded, test::adam(), 1e-2, batches);
  EXPECT_EQ(nn::random_draws_by_path(recorded).at("drop"), static_cast<std::uint64_t>(kStepCount));
}

TEST(RecordedStep, AReplayIsOneMessageAndUpdatesInPlace) {
  manual_seed(4);
  StepMlp model;
  optim::Adam opt({.lr = 1e-2});
  const auto batches = mlp_batches();
  auto step = optim::RecordedStep::record(model, opt, test::step_loss<StepMlp>, batches[0].x, batches[0].y);
  for (int s = 0; s < 3; ++s) (void)step(batches[s].x, batches[s].y, 1e-2);  // both recordings made
  Device::cpu().sync().get();
  const EngineCounters before = counters();
  const Tensor fc1_before = model.fc1.weight.value();
  const Tensor loss = step(batches[3].x, batches[3].y, 1e-2);
  EXPECT_EQ(counters().ops_submitted - before.ops_submitted, 1u);
  (void)loss.item<float>().get();
  const EngineCounters after = counters();
  EXPECT_EQ(after.passes_replayed - before.passes_replayed, 1u);
  EXPECT_GT(after.inplace_reuses - before.inplace_reuses, 0u);
  // The module holds the new values, the optimizer the new moments and counts.
  EXPECT_NE(model.fc1.weight.value().id(), fc1_before.id());
  EXPECT_EQ(opt.steps(), 4);
  EXPECT_EQ(opt.state().numbers.at("step.fc1.weight"), 4.0);
  EXPECT_EQ(step.recordings(), 2);
}

TEST(RecordedStep, TheMemoryOfAStepIsTheSameAtEveryReplay) {
  manual_seed(5);
  StepMlp model;
  optim::Sgd opt({.lr = 0.1, .momentum = 0.9});
  const auto batches = mlp_batches();
  auto step = optim::RecordedStep::record(model, opt, test::step_loss<StepMlp>, batches[0].x, batches[0].y);
  std::vector<std::size_t> in_use;
  for (int s = 0; s < 8; ++s) {
    (void)step(batches[s].x, batches[s].y, 0.1).item<float>().get();
    in_use.push_back(memory_stats().bytes_in_use);
  }
  // Parameters and moments are written in place: nothing piles up from step to step.
  for (int s = 3; s < 8; ++s) EXPECT_EQ(in_use[s], in_use[2]) << s;
}

// Two layers of one weight.
struct Tied : nn::Module {
  nn::Linear a{8, 8}, b{8, 8};
  Tied() { b.weight = a.weight; }
  Tensor forward(const Tensor& in) const { return b(a(in)); }
  KILN_MODULE(Tied, a, b)
};

TEST(RecordedStep, WhatCannotBeRecordedIsAnErrorFromRecordNamingIt) {
  manual_seed(6);
  const auto batches = mlp_batches();
  const Tensor& x = batches[0].x;
  const Tensor& y = batches[0].y;
  StepMlp model;
  optim::Sgd opt({.lr = 0.1});
  // Reading a value inside the step.
  test::expect_error(
      [&] {
        return optim::RecordedStep::record(
            model, opt,
            [](const StepMlp& m, const Tensor& xx, const Tensor& yy) {
              Tensor loss = nn::cross_entropy(m(xx), yy);
              (void)loss.item<float>();
              return loss;
            },
            x, y);
      },
      "RecordedStep::record", {"item", "cannot read values", "training step"});
  // Keeping a tensor made inside beyond the call.
  Tensor kept;
  test::expect_error(
      [&] {
        return optim::RecordedStep::record(
            model, opt,
            [&](const StepMlp& m, const Tensor& xx, const Tensor& yy) {
              Tensor logits = m(xx);
              kept = detach(logits);
              return nn::cross_entropy(logits, yy);
            },
            x, y);
      },
      "RecordedStep::record", {"keeps a tensor it made", "f32[6, 4]"});
  kept = Tensor();
  // Random values every replay would draw the same.
  test::expect_error(
      [&] {
        return optim::RecordedStep::record(
            model, opt,
            [](const StepMlp& m, const Tensor& xx, const Tensor& yy) {
              return nn::cross_entropy(m(add(xx, randn(xx.shape()))), yy);
            },
            x, y);
      },
      "RecordedStep::record", {"rand_normal f32[6, 8]", "draw again", "RedrawnSeeds"});
  // A loss of more than one element.
  test::expect_error(
      [&] {
        return optim::RecordedStep::record(
            model, opt, [](const StepMlp& m, const Tensor& xx, const Tensor&) { return m(xx); }, x, y);
      },
      "RecordedStep::record", {"backward", "scalar", "f32[6, 4]"});
  // Two fields holding one tensor (tied weights).
  Tied tied;
  test::expect_error(
      [&] {
        return optim::RecordedStep::record(
            tied, opt, [](const Tied& m, const Tensor& xx, const Tensor& yy) { return nn::cross_entropy(m(xx), yy); },
            x, y);
      },
      "RecordedStep::record", {"b.weight", "a.weight", "tied weights"});
  // After each error the module holds its own values and trains as before.
  const std::vector<float> w = model.fc1.weight.value().to_vector<float>().get();
  auto step = optim::RecordedStep::record(model, opt, test::step_loss<StepMlp>, x, y);
  EXPECT_EQ(model.fc1.weight.value().to_vector<float>().get(), w);
  EXPECT_EQ(opt.steps(), 0);
  (void)step(x, y, 0.1).item<float>().get();
  EXPECT_NE(model.fc1.weight.value().to_vector<float>().get(), w);
  // A batch of other shapes at a replay.
  const Tensor wide = randn(Shape{5, 8});
  test::expect_error([&] { return step(wide, y, 0.1); }, "recorded step", {"#0", "f32[5, 8]", "f32[6, 8]"});
  // A learning rate that is not one.
  test::expect_error([&] { return step(x, y, -1.0); }, "recorded step", {"learning rate", "-1"});
}

TEST(RecordedStep, AnOptimizerThatIsNotRecordableIsAnError) {
  // An optimizer of a user's that reads ctx.lr as a constant of its ops.
  struct SignSgd : optim::Optimizer {
    SignSgd() : Optimizer(0.1, 0.0) {}
    const char* name() const override { return "SignSgd"; }
    std::vector<std::string> slot_names() const override { return {}; }
    Tensor update_parameter(const optim::UpdateContext& ctx, Tensor param, const Tensor& grad,
                            std::vector<Tensor>&) const override {
      return sub(std::move(param), mul(sign(grad), ctx.lr));
    }
  } opt;
  StepMlp model;
  const auto batches = mlp_batches();
  test::expect_error(
      [&] { return optim::RecordedStep::record(model, opt, test::step_loss<StepMlp>, batches[0].x, batches[0].y); },
      "RecordedStep::record", {"SignSgd", "recordable"});
}

TEST(RecordedStep, TwoModelsStepOnTwoThreadsAtOnce) {
  const auto batches = mlp_batches();
  std::vector<StepMlp> models;
  models.reserve(2);
  for (std::uint64_t seed : {11u, 12u}) {
    manual_seed(seed);
    models.emplace_back();
  }
  std::vector<test::StepRun> eager;
  for (const StepMlp& m : models) eager.push_back(test::eager_run(m.clone(), test::adam(), 1e-2, batches));
  std::vector<test::StepRun> recorded(2);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] { recorded[t] = test::recorded_run(models[t].clone(), test::adam(), 1e-2, batches); });
  for (std::thread& t : threads) t.join();
  for (std::size_t t = 0; t < 2; ++t) test::expect_same_run(eager[t], recorded[t]);
}

TEST(RecordedStep, EagerAndReplayedStepsMixAndAChangedModuleIsRecordedAgain) {
  manual_seed(8);
  StepMlp model;
  StepMlp twin = model.clone();
  optim::Adam opt({.lr = 1e-2}), twin_opt({.lr = 1e-2});
  const auto batches = mlp_batches();
  auto step = optim::RecordedStep::record(model, opt, test::step_loss<StepMlp>, batches[0].x, batches[0].y);
  std::vector<float> got, want;
  for (int s = 0; s < 6; ++s) {
    const test::StepBatch& b = batches[s];
    if (s == 2) {
      // An eager step between replays: the next replay reads what it left.
      const Gradients g = backward(test::step_loss(model, b.x, b.y));
      model = opt.step(1e-2, std::move(model), g);
      got.push_back(0);
    } else if (s == 4) {
      // Frozen: a parameter the update leaves; the step is recorded again.
      model.fc1.freeze();
      twin.fc1.freeze();
      got.push_back(step(b.x, b.y, 1e-2).item<float>().get());
    } else {
      got.push_back(step(b.x, b.y, 1e-2).item<float>().get());
    }
    const Tensor loss = test::step_loss(twin, b.x, b.y);
    const Gradients g = backward(loss);
    twin = twin_opt.step(1e-2, std::move(twin), g);
    want.push_back(s == 2 ? 0 : loss.item<float>().get());
  }
  EXPECT_EQ(test::float_bits(got), test::float_bits(want));
  EXPECT_EQ(test::tensor_bits(model.fc2.weight.value()), test::tensor_bits(twin.fc2.weight.value()));
  EXPECT_EQ(step.recordings(), 3);
}

}  // namespace
}  // namespace kiln
