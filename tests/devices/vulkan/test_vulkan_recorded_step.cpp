// A recorded training step on the GPU (optim::RecordedStep): replayed steps give the eager
// steps' losses, parameters, batch norm statistics and moments bit for bit, on a small MLP
// (Adam) and a small CNN (SGD with momentum and weight decay), a few steps each (lavapipe
// compiles every kernel on one core); a replay is one message.
#include <gtest/gtest.h>

#include "optim/recorded_step_support.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

constexpr int kGpuSteps = 5;

TEST(VulkanRecordedStep, MlpWithAdamStepsAsTheEagerStepBitForBit) {
  KILN_REQUIRE_VULKAN();
  manual_seed(1);
  const StepMlp model(vk0());
  const auto batches = step_batches(kGpuSteps, 6, {8}, 4, vk0());
  expect_same_run(eager_run(model.clone(), adamw(), 1e-2, batches), recorded_run(model.clone(), adamw(), 1e-2, batches));
}

TEST(VulkanRecordedStep, CnnWithBatchNormStepsAsTheEagerStepBitForBit) {
  KILN_REQUIRE_VULKAN();
  manual_seed(3);
  const StepCnn model(vk0());
  const auto batches = step_batches(kGpuSteps, 4, {2, 5, 5}, 3, vk0());
  expect_same_run(eager_run(model.clone(), sgd_momentum_wd(), 1e-2, batches),
                  recorded_run(model.clone(), sgd_momentum_wd(), 1e-2, batches));
}

TEST(VulkanRecordedStep, AReplayIsOneMessage) {
  KILN_REQUIRE_VULKAN();
  manual_seed(4);
  StepMlp model(vk0());
  optim::Adam opt({.lr = 1e-2});
  const auto batches = step_batches(4, 6, {8}, 4, vk0());
  auto step = optim::RecordedStep::record(model, opt, step_loss<StepMlp>, batches[0].x, batches[0].y);
  for (int s = 0; s < 3; ++s) (void)step(batches[s].x, batches[s].y, 1e-2).item<float>().get();
  const EngineCounters before = counters(vk0());
  const Tensor loss = step(batches[3].x, batches[3].y, 1e-2);
  EXPECT_EQ(counters(vk0()).ops_submitted - before.ops_submitted, 1u);
  EXPECT_TRUE(std::isfinite(loss.item<float>().get()));
  EXPECT_EQ(counters(vk0()).passes_replayed - before.passes_replayed, 1u);
}

}  // namespace
}  // namespace kiln::test
