// Several streams on one GPU (KILN_VULKAN_QUEUES=2 or set_gpu_streams(2)): one kiln device per
// stream, each with its own compute queue where the GPU's family has two (else they share one);
// their work, forward and backward, runs from many threads at once and matches the CPU; `to`
// moves tensors between them; mixing them in one op is an error naming both. ctest runs these as
// `devices_queues` (KILN_VULKAN_QUEUES=2) and `devices_streams` (set_gpu_streams(2)); the main
// devices run leaves them out (it opens one stream a GPU).
#include <algorithm>
#include <cstdlib>
#include <thread>

#include "kiln/autograd/autograd.h"
#include "kiln/devices/vulkan/vk_context.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

constexpr Tol kQueuesF32{1e-4, 1e-4};

// Two streams a GPU, asked for by KILN_VULKAN_QUEUES=2 (ctest: devices_queues) or through
// set_gpu_streams(2) before the engine starts (KILN_TEST_GPU_STREAMS=2; ctest: devices_streams).
bool two_streams_asked() {
  static const bool asked = [] {
    const char* api = std::getenv("KILN_TEST_GPU_STREAMS");
    if (api && std::string(api) == "2") {
      set_gpu_streams(2);  // the first thing this process asks of the engine
      return true;
    }
    const char* env = std::getenv("KILN_VULKAN_QUEUES");
    return env && std::string(env) == "2";
  }();
  return asked;
}

#define KILN_REQUIRE_TWO_STREAMS()                                                             \
  do {                                                                                         \
    const bool two = two_streams_asked();                                                      \
    KILN_REQUIRE_VULKAN();                                                                     \
    if (!two) GTEST_SKIP() << "needs two streams a GPU (ctest: devices_queues, devices_streams)"; \
  } while (0)

const Device kFirst = Device::vulkan(0), kSecond = Device::vulkan(1);

// The count is fixed once the engine has opened its devices: a later call is an error that says
// so, as is a count out of range (this runs in the main devices run, after the engine started).
TEST(VulkanStreamsSetting, IsAnErrorOnceTheEngineStartedOrOutOfRange) {
  (void)devices();
  auto message = [](std::uint32_t n) -> std::string {
    try {
      set_gpu_streams(n);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(0).find("set_gpu_streams: streams per GPU must be 1 to 64, got 0"), std::string::npos) << message(0);
  EXPECT_NE(message(65).find("must be 1 to 64, got 65"), std::string::npos) << message(65);
  EXPECT_NE(message(2).find("set_gpu_streams: the engine has already opened its devices"), std::string::npos)
      << message(2);
}

TEST(VulkanQueues, ListsOneDevicePerStreamOfAGpu) {
  KILN_REQUIRE_TWO_STREAMS();
  const std::vector<Device> all = devices();
  ASSERT_NE(std::find(all.begin(), all.end(), kSecond), all.end());
  const DeviceProperties p0 = device_properties(kFirst), p1 = device_properties(kSecond);
  // Both streams of the first GPU: the same driver device, type and memory.
  const vk::PhysicalDeviceInfo* info = nullptr;
  for (const auto& candidate : vk::Instance::get()->devices())
    if (p0.name.find("(" + candidate.name + ", ") != std::string::npos) info = &candidate;
  ASSERT_NE(info, nullptr) << p0.name;
  EXPECT_NE(p1.name.find("(" + info->name + ", "), std::string::npos) << p1.name;
  EXPECT_EQ(p0.type, p1.type);
  EXPECT_EQ(p0.memory_bytes, p1.memory_bytes);
  // A queue each where the family has two, else both on queue 0.
  const std::uint32_t queues = std::min(2u, info->compute_queue_count);
  EXPECT_NE(p0.name.find("stream 1 of 2 on queue 0)"), std::string::npos) << p0.name;
  EXPECT_NE(p1.name.find("stream 2 of 2 on queue " + std::to_string(1 % queues) + ")"), std::string::npos) << p1.name;
  // The best GPU is its first stream (lavapipe, a software device, is never the best device).
  if (best_device().kind == DeviceKind::vulkan) {
    EXPECT_EQ(best_device(), kFirst);
  }
}

// A small module's forward and backward on the given device: loss = sum(gelu(x @ w) * y).
struct Step {
  std::vector<double> loss, grad_w;
};
Step module_step(Device d, std::uint64_t seed) {
  Generator gen(seed);
  const Tensor x = randn(Shape{24, 40}, gen), w = randn(Shape{40, 36}, gen), y = randn(Shape{24, 36}, gen);
  const Tensor wd = require_grad(to(w, d));
  const Tensor loss = sum(mul(gelu(matmul(to(x, d), wd)), to(y, d)));
  const Gradients g = backward(loss);
  return {host_values(loss), host_values(g.get(wd))};
}

// Four threads, two on each stream, each running its own module 12 times: every result equals
// the CPU's.
TEST(VulkanQueues, ThreadsOnTwoStreamsComputeGradientsAtOnce) {
  KILN_REQUIRE_TWO_STREAMS();
  constexpr int kThreads = 4, kSteps = 12;
  std::vector<Step> got(kThreads * kSteps), want(kThreads * kSteps);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &got] {
      for (int s = 0; s < kSteps; ++s) got[t * kSteps + s] = module_step(t % 2 ? kSecond : kFirst, t * 100 + s);
    });
  for (int t = 0; t < kThreads; ++t)
    for (int s = 0; s < kSteps; ++s) want[t * kSteps + s] = module_step(Device::cpu(), t * 100 + s);
  for (auto& th : threads) th.join();
  for (int i = 0; i < kThreads * kSteps; ++i) {
    EXPECT_TRUE(close(got[i].loss, want[i].loss, Tol{1e-4, 1e-3})) << "thread " << i / kSteps << " step " << i % kSteps;
    EXPECT_TRUE(close(got[i].grad_w, want[i].grad_w, kQueuesF32)) << "thread " << i / kSteps << " step " << i % kSteps;
  }
}

// `to` between the streams copies on the GPU (peer_copies counts it), for every dtype, and the
// source may overwrite its value in place afterwards without changing the copy.
TEST(VulkanQueues, ToMovesBetweenStreamsAndMixingThemIsAnError) {
  KILN_REQUIRE_TWO_STREAMS();
  const std::uint64_t peer_before = counters(kSecond).peer_copies;
  const Tensor x = arange(0, 1000, 1, {DType::f32});
  Tensor on_first = mul(to(x, kFirst), 3.0);
  const Tensor on_second = to(on_first, kSecond);
  EXPECT_EQ(on_second.device(), kSecond);
  const Tensor overwritten = add(std::move(on_first), 5.0);  // may reuse on_first's buffer
  EXPECT_TRUE(close(host_values(add(on_second, 1.0)), host_values(add(mul(x, 3.0), 1.0)), {}));
  EXPECT_TRUE(close(host_values(overwritten), host_values(add(mul(x, 3.0), 5.0)), {}));
  for (DType t : {DType::i64, DType::bool_, DType::f16}) {
    const Tensor y = cast(to(arange(0, 37, 1, {DType::i64}), kFirst), t);
    EXPECT_TRUE(close(host_values(cast(to(y, kSecond), DType::f32)), host_values(cast(y, DType::f32)), {}))
        << dtype_name(t);
  }
  EXPECT_EQ(counters(kSecond).peer_copies - peer_before, 4u);
  on_first = mul(to(x, kFirst), 3.0);
  try {
    (void)add(on_first, on_second);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("different devices"), std::string::npos) << what;
    EXPECT_NE(what.find("vulkan:0"), std::string::npos) << what;
    EXPECT_NE(what.find("vulkan:1"), std::string::npos) << what;
  }
}

// A failure on one stream reaches its own futures (and what `to` takes from them) only: the
// other stream keeps serving.
TEST(VulkanQueues, AFailureOnOneStreamLeavesTheOtherServing) {
  KILN_REQUIRE_TWO_STREAMS();
  const Tensor huge = full(Shape{1ll << 38}, 1.0, {DType::f32, kFirst});  // 1 TiB
  const Tensor fine = add(full(Shape{5}, 2.0, {DType::f32, kSecond}), 1.0);
  EXPECT_THROW((void)huge.to_vector<float>().get(), Error);
  EXPECT_THROW((void)to(huge, kSecond).to_vector<float>().get(), Error);  // the failure travels
  EXPECT_TRUE(close(host_values(fine), std::vector<double>(5, 3.0), {}));
  EXPECT_TRUE(close(host_values(add(full(Shape{3}, 1.0, {DType::f32, kFirst}), 1.0)), std::vector<double>(3, 2.0), {}));
}

}  // namespace
}  // namespace kiln::test
