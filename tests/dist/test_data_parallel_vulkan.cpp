// Data-parallel training with the parameters on a Vulkan device (lavapipe in CI): 2 processes
// with half the rows each end with the parameters of one process with all of them on the same
// device (within 1e-5 relative), bit-identical on both ranks after every step. The gradients pass
// through host memory for the all-reduce and back. A few steps only: lavapipe is slow.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "support/reference.h"
#include "training.h"
#include "world.h"

namespace kiln {
namespace {

constexpr int kVulkanSteps = 4;

std::optional<Device> vulkan_device() {
  for (const Device& d : test::test_devices())
    if (d.kind == DeviceKind::vulkan) return d;
  return std::nullopt;
}

Tensor step_loss_on(const test::DistMlp& m, int step, std::int64_t first, std::int64_t count, Device d) {
  const auto [x, y] = test::batch_rows(step, first, count);
  return nn::cross_entropy(m(to(x, d)), to(y, d));
}

TEST(DistWorker, DISABLED_TrainMlpOnVulkan) {
  dist::ProcessGroup group = dist::ProcessGroup::from_env();
  const int r = group.rank(), n = group.world_size();
  const Device d = Device::vulkan(std::atoi(std::getenv("KILN_TEST_VULKAN_INDEX")));
  test::DistMlp model = dist::replicate(group, test::DistMlp{}.to(d));
  dist::GradientReducer reducer(group, model, {.bucket_bytes = 256});  // several buckets
  optim::Adam adam(optim::AdamOptions{.lr = 1e-2});
  const std::int64_t rows = test::kGlobalBatch / n;
  for (int step = 0; step < kVulkanSteps; ++step) {
    const Gradients grads = reducer.backward(model, step_loss_on(model, step, r * rows, rows, d));
    for (const Tensor& p : model.parameters()) EXPECT_EQ(grads.get(p).device(), d) << "a gradient left the device";
    model = adam.step(std::move(model), grads);
    const std::vector<std::string> all = group.all_gather(test::as_bytes(test::flat_parameters(model)));
    for (int q = 1; q < n; ++q)
      EXPECT_EQ(all[static_cast<std::size_t>(q)], all[0]) << "rank " << q << " after step " << step;
  }
  for (const Tensor& p : model.parameters()) EXPECT_EQ(p.device(), d);
  if (r == 0) {
    std::ofstream out(test::report_path(0).parent_path() / "params.bin", std::ios::binary);
    out << test::as_bytes(test::flat_parameters(model));
  }
  test::write_report(r, ::testing::Test::HasFailure() ? "failed" : "ok");
}

TEST(DistDataParallelVulkan, TwoProcessesMatchOneProcessWithTheWholeBatch) {
  const std::optional<Device> d = vulkan_device();
  if (!d) GTEST_SKIP() << "no Vulkan device (lavapipe: mesa-vulkan-drivers, VK_ICD_FILENAMES; or KILN_TEST_VULKAN=0)";
  // The reference first: its kernels land in the pipeline cache the ranks then read.
  test::DistMlp model = test::DistMlp{}.to(*d);
  optim::Adam adam(optim::AdamOptions{.lr = 1e-2});
  for (int step = 0; step < kVulkanSteps; ++step)
    model = adam.step(std::move(model), backward(step_loss_on(model, step, 0, test::kGlobalBatch, *d)));
  const std::vector<float> want = test::flat_parameters(model);

  const test::WorldResult w =
      test::run_world("TrainMlpOnVulkan", 2, 240, {{"KILN_TEST_VULKAN_INDEX", std::to_string(d->index)}});
  ASSERT_TRUE(test::every_rank_ok(w));
  test::expect_trained_like(test::read_text(w.out / "params.bin"), want, 0.01);
}

}  // namespace
}  // namespace kiln
