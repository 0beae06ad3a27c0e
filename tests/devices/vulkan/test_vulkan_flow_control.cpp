// Flow control on a GPU's stream: the bound holds there as on the CPU, and work crossing between
// the CPU's and the GPU's streams (kiln::to both ways), each at a tight bound, never deadlocks.
// The expected values are plain arithmetic.
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

class VulkanFlowControl : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = flow_control();
    saved_threshold_ = flush_threshold();
    set_flush_threshold(1 << 20);  // only a read, a sync or a held-back submitter runs the work
  }
  void TearDown() override {
    set_flow_control(saved_);
    set_flush_threshold(saved_threshold_);
  }

 private:
  FlowControlOptions saved_;
  std::size_t saved_threshold_ = 0;
};

TEST_F(VulkanFlowControl, OpsInFlightStayWithinTheBound) {
  KILN_REQUIRE_VULKAN();
  set_flow_control({.max_ops = 16, .max_bytes = 0});
  const EngineCounters before = counters(vk0());
  Tensor x = zeros(Shape{256}, {.device = vk0()});
  std::uint64_t most = 0;
  for (int i = 0; i < 200; ++i) {
    x = std::move(x) + 1.0;
    most = std::max(most, counters(vk0()).in_flight_ops);
  }
  EXPECT_LE(most, 16u);
  EXPECT_GT(counters(vk0()).held_back, before.held_back);
  EXPECT_EQ(x.to_vector<float>().get(), std::vector<float>(256, 200.0f));
}

TEST_F(VulkanFlowControl, TransfersBothWaysAtTightBoundsDoNotDeadlock) {
  KILN_REQUIRE_VULKAN();
  set_flow_control({.max_ops = 4, .max_bytes = 4096});
  Tensor x = zeros(Shape{512});  // 2 KiB
  for (int i = 0; i < 20; ++i) {
    Tensor g = to(std::move(x), vk0()) + 1.0;
    x = to(std::move(g), Device::cpu()) + 1.0;
  }
  EXPECT_EQ(x.to_vector<float>().get(), std::vector<float>(512, 40.0f));
}

}  // namespace
}  // namespace kiln::test
