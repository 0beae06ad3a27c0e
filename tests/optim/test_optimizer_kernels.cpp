// Each parameter's update is one fused kernel, and when the module is handed over the kernel
// writes the new value and the moments into their old buffers: counted with the engine's
// counters, on every device.
#include <gtest/gtest.h>

#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"
#include "support/fusion_scope.h"
#include "support/reference.h"

namespace kiln {
namespace {

class OptimizerKernels : public ::testing::TestWithParam<Device> {};

struct StepCount {
  std::uint64_t kernels = 0, reuses = 0;
};

// Kernels and in-place reuses of one step (gradients made and synced before counting).
template <class Opt> StepCount count_step(Opt& opt, nn::Sequential& model, Device d, bool hand_over) {
  Gradients g;
  for (const Tensor& p : model.parameters()) g.accumulate(p.id(), full_like(p, 0.25));
  sync(d).get();
  const EngineCounters before = counters(d);
  model = hand_over ? opt.step(1e-2, std::move(model), g) : opt.step(1e-2, model, g);
  for (const Tensor& p : model.parameters()) p.to_vector<float>().get();
  const EngineCounters after = counters(d);
  return {after.kernels_launched - before.kernels_launched, after.inplace_reuses - before.inplace_reuses};
}

TEST_P(OptimizerKernels, OneKernelPerParameterWritingInPlace) {
  const Device d = GetParam();
  const test::FusionScope fusion(true, d);  // also under the suite's KILN_FUSION=0 run
  nn::Sequential model = nn::Sequential(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 4)).to(d);
  const std::size_t params = model.parameters().size();
  optim::AdamW adam({.weight_decay = 0.1});
  count_step(adam, model, d, true);  // the first step makes the moments
  const StepCount steady = count_step(adam, model, d, true);
  EXPECT_EQ(steady.kernels, params);
  // The value and both moments of every parameter take their old buffers.
  EXPECT_EQ(steady.reuses, 3 * params);
  // A copy handed in keeps its values: new buffers for the values while the copy holds them
  // (the moments still reuse theirs). A value whose old version the caller drops while its
  // update is still pending may take the old buffer after all (the last parameter's, here).
  const StepCount shared = count_step(adam, model, d, false);
  EXPECT_EQ(shared.kernels, params);
  EXPECT_GE(shared.reuses, 2 * params);
  EXPECT_LT(shared.reuses, 3 * params);

  optim::Sgd sgd({.lr = 0.1, .momentum = 0.9, .nesterov = true, .weight_decay = 1e-4});
  count_step(sgd, model, d, true);
  EXPECT_EQ(count_step(sgd, model, d, true).kernels, params);
}

INSTANTIATE_TEST_SUITE_P(Devices, OptimizerKernels, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
