// Checkpointing with the core's test rules: checkpoint() regions and the recompute_memory_bound
// policy give the same gradients, bit for bit, with a lower peak during backward.
#include <gtest/gtest.h>

#include <cstdio>

#include "core_rules.h"
#include "scenarios.h"

namespace kiln {
namespace {

class Checkpoint : public ::testing::Test {
 protected:
  test::CoreRules rules_;
};

TEST_F(Checkpoint, RegionsRecomputeWithTheSameGradientsAndALowerPeak) {
  const test::BackwardRun plain = test::chain_run(false);
  const test::BackwardRun ckpt = test::chain_run(true);
  EXPECT_EQ(ckpt.grads, plain.grads);
  EXPECT_LT(ckpt.backward_peak, plain.backward_peak);
  std::printf("chain: backward peak %.1f MiB plain, %.1f MiB checkpointed\n", plain.backward_peak / 1048576.0,
              ckpt.backward_peak / 1048576.0);
}

TEST_F(Checkpoint, MemoryBoundPolicyKeepsOnlyComputeBoundValues) {
  const test::BackwardRun all = test::mlp_policy_run(CheckpointPolicy::save_all);
  const test::BackwardRun balanced = test::mlp_policy_run(CheckpointPolicy::recompute_memory_bound);
  const test::BackwardRun none = test::mlp_policy_run(CheckpointPolicy::recompute_all);
  EXPECT_EQ(balanced.grads, all.grads);
  EXPECT_EQ(none.grads, all.grads);
  EXPECT_LT(balanced.backward_peak, all.backward_peak);
  std::printf("mlp: backward peak %.1f MiB save_all, %.1f MiB recompute_memory_bound, %.1f MiB recompute_all\n",
              all.backward_peak / 1048576.0, balanced.backward_peak / 1048576.0, none.backward_peak / 1048576.0);
}

TEST_F(Checkpoint, CapturedParametersGetTheirGradients) {
  // The region uses w without taking it as an input: it is kept as a value and gets its gradient.
  const Tensor x = require_grad(full(Shape{3}, 2.0));
  const Tensor w = require_grad(full(Shape{3}, 3.0));
  const Tensor y = checkpoint(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(exp(mul(in[0], w)), 1.0)}; }, {x})[0];
  const Gradients g = backward(sum(y));
  const float e6 = std::exp(6.0f);
  const std::vector<float> gx = test::values(g.get(x)), gw = test::values(g.get(w));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(gx[i], 3.0f * e6, 1e-3f * e6);
    EXPECT_NEAR(gw[i], 2.0f * e6, 1e-3f * e6);
  }
}

}  // namespace
}  // namespace kiln
