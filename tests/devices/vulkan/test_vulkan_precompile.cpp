// A plan's new kernels compile ahead of its batch, several at once (DeviceBackend::
// precompile_fused): a recorded training step's first replay (the Learner's path) hands its new
// fused and elementwise kernels over once, before any of them runs, and gives the CPU's values.
// The chain in the loss (sin, cos, tanh, cube) is this test's own, so its kernels are new to the
// process whichever tests ran before.
#include <gtest/gtest.h>

#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

struct Model : nn::Module {
  nn::Linear fc;
  explicit Model(Device d) : fc(6, 4, {.device = d}) {}
  KILN_MODULE(Model, fc)
};

Tensor odd_loss(const Model& m, const Tensor& x, const Tensor& y) {
  const Tensor out = m.fc(x);
  const Tensor t = tanh(sub(out, y));
  return mean(add(mul(mul(sin(out), cos(out)), 1.7), mul(mul(t, t), t)));
}

struct Trained {
  std::vector<double> weight, bias, losses;
};

Trained train(Device d, std::uint64_t* precompiled_first, std::uint64_t* precompiled_second) {
  manual_seed(7);
  Model model(d);
  optim::Sgd opt({.lr = 0.1});
  Generator gen(8);
  const Tensor x = randn(Shape{5, 6}, gen, {.device = d}), y = randn(Shape{5, 4}, gen, {.device = d});
  auto step = optim::RecordedStep::record(model, opt, odd_loss, x, y);
  sync(d).get();
  Trained t;
  std::uint64_t seen = counters(d).kernels_precompiled;
  for (int s = 0; s < 2; ++s) {
    t.losses.push_back(step(x, y, 0.1).item<float>().get());
    const std::uint64_t now = counters(d).kernels_precompiled;
    if (precompiled_first && s == 0) *precompiled_first = now - seen;
    if (precompiled_second && s == 1) *precompiled_second = now - seen;
    seen = now;
  }
  t.weight = host_values(model.fc.weight);
  t.bias = host_values(model.fc.bias);
  return t;
}

TEST(VulkanPrecompile, ARecordedStepsNewKernelsCompileAheadOnceAndGiveTheCpusValues) {
  KILN_REQUIRE_VULKAN();
  std::uint64_t first = 0, second = 0;
  const Trained gpu = train(vk0(), &first, &second);
  const Trained cpu = train(Device::cpu(), nullptr, nullptr);
  EXPECT_GE(first, 2u);   // the step's new kernels, handed over before the first replay ran
  EXPECT_EQ(second, 0u);  // the second replay runs the same plan
  EXPECT_EQ(counters(Device::cpu()).kernels_precompiled, 0u);  // the CPU compiles nothing ahead
  const Tolerance tol{1e-5, 1e-6};
  EXPECT_TRUE(values_close(gpu.losses, cpu.losses, tol));
  EXPECT_TRUE(values_close(gpu.weight, cpu.weight, tol));
  EXPECT_TRUE(values_close(gpu.bias, cpu.bias, tol));
}

}  // namespace
}  // namespace kiln::test
