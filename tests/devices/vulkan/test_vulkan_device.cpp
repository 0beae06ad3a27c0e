// The Vulkan device on its own: discovery, transfers of every dtype, creation ops, errors
// (mixing devices, out of memory, i64 division by zero) and kiln::to between devices.
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include "kiln/devices/vulkan/vk_context.h"
#include "support/exact_inputs.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

TEST(VulkanDevice, IsListedWithItsName) {
  KILN_REQUIRE_VULKAN();
  const std::vector<Device> all = devices();
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0], Device::cpu());
  const std::string name = device_name(vk0());
  EXPECT_EQ(name.rfind("vulkan:0 (", 0), 0u) << name;
}

// Type and memory as the driver reports them, best first; a software device (lavapipe) is
// never the default over the CPU device.
TEST(VulkanDevice, ListsTypeAndMemoryBestFirst) {
  KILN_REQUIRE_VULKAN();
  auto instance = vk::Instance::get();
  auto rank = [](const std::string& type) {
    return type == "discrete" ? 0 : type == "integrated" ? 1 : type == "virtual" ? 2 : type == "software" ? 4 : 3;
  };
  int previous = -1;
  for (const Device d : devices()) {
    if (d.kind != DeviceKind::vulkan) continue;
    const DeviceProperties p = device_properties(d);
    EXPECT_EQ(p.device, d);
    EXPECT_EQ(p.name, device_name(d));
    // The same physical device as the driver lists it (by name), with its largest local heap.
    const vk::PhysicalDeviceInfo* info = nullptr;
    for (const auto& candidate : instance->devices())
      if (p.name.find("(" + candidate.name) != std::string::npos) info = &candidate;
    ASSERT_NE(info, nullptr) << p.name;
    EXPECT_EQ(p.memory_bytes, info->device_local_bytes) << p.name;
    EXPECT_GT(p.memory_bytes, 0u) << p.name;
    EXPECT_EQ(p.type, info->on_host_cores() ? std::string("software") : std::string(info->type_name())) << p.name;
    EXPECT_GE(rank(p.type), previous) << p.name << " listed after a lesser device";
    previous = rank(p.type);
  }
  const Device best = best_device();
  if (best.kind == DeviceKind::vulkan) {
    EXPECT_NE(device_properties(best).type, "software");
  } else {
    for (const Device d : devices())
      if (d.kind == DeviceKind::vulkan) {
        EXPECT_EQ(device_properties(d).type, "software") << device_name(d);
      }
  }
}

// counters().device_busy_ns: with device timing on, the device's own time for completed work,
// more than nothing for a kernel that ran and never more than the wall-clock time around it;
// with timing off (the default), nothing is added.
TEST(VulkanDevice, CountsItsBusyTimeByItsOwnClock) {
  KILN_REQUIRE_VULKAN();
  auto instance = vk::Instance::get();
  const int best = vk::best_device_index(instance->devices());
  ASSERT_GE(best, 0);
  const bool timestamps = instance->devices()[static_cast<std::size_t>(best)].timestamp_valid_bits > 0;
  Tensor x = full(Shape{1 << 20}, 1.5, {DType::f32, vk0()});
  sync(vk0()).get();
  set_device_timing(vk0(), false);
  const std::uint64_t untimed_before = counters(vk0()).device_busy_ns;
  Tensor z = exp(mul(x, x));
  sync(vk0()).get();
  EXPECT_EQ(counters(vk0()).device_busy_ns, untimed_before) << "timing off measures nothing";

  set_device_timing(vk0(), true);
  const std::uint64_t before = counters(vk0()).device_busy_ns;
  const auto start = std::chrono::steady_clock::now();
  Tensor y = exp(mul(x, x));
  sync(vk0()).get();
  const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  const std::uint64_t busy = counters(vk0()).device_busy_ns - before;
  set_device_timing(vk0(), false);
  if (!timestamps) {
    EXPECT_EQ(busy, 0u) << "a queue without timestamps measures nothing";
    return;
  }
  EXPECT_GT(busy, 0u);
  EXPECT_LE(busy, static_cast<std::uint64_t>(wall.count())) << "busy " << busy << " ns, wall " << wall.count() << " ns";
  EXPECT_NEAR(y.to_vector<float>().get()[7], std::exp(2.25f), 1e-5f * std::exp(2.25f));
}

TEST(VulkanDevice, RoundTripEveryDtype) {
  KILN_REQUIRE_VULKAN();
  std::vector<float> f(1000);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) * 0.37f - 100.0f;
  f[3] = NAN;
  f[4] = -INFINITY;
  EXPECT_TRUE(close(host_values(from_vector(f, Shape{10, 100}, vk0())), host_values(from_vector(f, Shape{10, 100})), {}));
  std::vector<std::int64_t> i{0, -1, 1, INT64_MIN, INT64_MAX, 1234567890123LL};
  EXPECT_EQ(from_vector(i, Shape{6}, vk0()).to_vector<std::int64_t>().get(), i);
  std::vector<bool> b{true, false, false, true, true};
  EXPECT_EQ(from_vector(b, Shape{5}, vk0()).to_vector<bool>().get(), b);
  // Empty and 0-d tensors.
  EXPECT_TRUE(from_vector(std::vector<float>{}, Shape{0, 3}, vk0()).to_vector<float>().get().empty());
  EXPECT_EQ(scalar(2.5, {DType::f32, vk0()}).item<float>().get(), 2.5f);
}

TEST(VulkanDevice, LargeUploadCrossesStagingBlocks) {
  KILN_REQUIRE_VULKAN();
  std::vector<float> f(3 << 20);  // 12 MiB: bigger than one staging block
  std::iota(f.begin(), f.end(), 0.0f);
  EXPECT_EQ(from_vector(f, Shape{static_cast<std::int64_t>(f.size())}, vk0()).to_vector<float>().get(), f);
}

// One memory for host and device (lavapipe, an integrated GPU): a read copies straight out of
// the tensor's mapped memory and an upload to an idle device straight into it, with no staging
// buffer and no copy on the device; an upload while kernels are in flight is staged, as the
// host must not write a block that a submitted kernel may still use. Values right either way.
TEST(VulkanDevice, UnifiedMemoryReadsAndUploadsWithoutStaging) {
  KILN_REQUIRE_VULKAN();
  const VkPhysicalDeviceType type = best_vulkan_device_info().type;
  if (type != VK_PHYSICAL_DEVICE_TYPE_CPU && type != VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU)
    GTEST_SKIP() << "a discrete GPU: its reads and uploads are staged";
  std::vector<float> f(1 << 16);
  std::iota(f.begin(), f.end(), -1000.0f);
  std::vector<float> twice(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) twice[i] = 2.0f * f[i];
  const Shape shape{static_cast<std::int64_t>(f.size())};
  sync(vk0()).get();
  const std::uint64_t staged = counters(vk0()).staged_transfers;
  const Tensor x = from_vector(f, shape, vk0());
  EXPECT_EQ(mul(x, 2.0).to_vector<float>().get(), twice);
  EXPECT_EQ(to_bytes(x).get().size(), f.size() * sizeof(float));
  EXPECT_EQ(counters(vk0()).staged_transfers, staged) << "an upload to an idle device and two reads";

  // Kernels in flight (submitted, not waited for) and uploads behind them, into blocks just freed.
  Generator gen(1);
  Tensor busy = randn(Shape{256, 256}, gen, {DType::f32, vk0()});
  for (int i = 0; i < 8; ++i) busy = tanh(matmul(busy, busy));
  std::vector<Tensor> uploads;
  for (int i = 0; i < 4; ++i) uploads.push_back(mul(from_vector(f, shape, vk0()), 2.0));
  for (const Tensor& u : uploads) EXPECT_EQ(u.to_vector<float>().get(), twice);
  EXPECT_EQ(busy.to_vector<float>().get().size(), 256u * 256u);
}

TEST(VulkanDevice, CreationOpsMatchTheCpu) {
  KILN_REQUIRE_VULKAN();
  for (DType t : {DType::f32, DType::i64, DType::bool_}) {
    EXPECT_TRUE(close(host_values(full(Shape{3, 7}, 3.0, {t, vk0()})), host_values(full(Shape{3, 7}, 3.0, {t})), {}));
    EXPECT_TRUE(close(host_values(eye(4, 6, {t, vk0()})), host_values(eye(4, 6, {t})), {}));
  }
  EXPECT_TRUE(close(host_values(arange(-5, 17, 3, {DType::i64, vk0()})), host_values(arange(-5, 17, 3, {DType::i64})), {}));
  EXPECT_TRUE(close(host_values(arange(0.5, 9.0, 0.25, {DType::f32, vk0()})), host_values(arange(0.5, 9.0, 0.25)), {1e-6, 1e-6}));
  EXPECT_TRUE(close(host_values(linspace(-1, 2, 101, {DType::f32, vk0()})), host_values(linspace(-1, 2, 101)), {1e-6, 1e-6}));
  EXPECT_TRUE(close(host_values(full(Shape{0}, 1.0, {DType::f32, vk0()})), {}, {}));
}

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

TEST(VulkanDevice, RandomOpsAreSeededAndDistributed) {
  KILN_REQUIRE_VULKAN();
  const Shape s{100000};
  Generator g1(7), g2(7);
  const std::vector<double> u1 = host_values(uniform(s, -2, 3, g1, {DType::f32, vk0()}));
  const std::vector<double> u2 = host_values(uniform(s, -2, 3, g2, {DType::f32, vk0()}));
  EXPECT_EQ(u1, u2);
  for (double x : u1) ASSERT_TRUE(x >= -2 && x < 3) << x;
  EXPECT_NEAR(mean(u1), 0.5, 0.03);

  const std::vector<double> n = host_values(normal(s, 1.0, 2.0, g1, {DType::f32, vk0()}));
  const double m = mean(n);
  double var = 0;
  for (double x : n) var += (x - m) * (x - m);
  EXPECT_NEAR(m, 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(var / static_cast<double>(n.size())), 2.0, 0.05);

  const std::vector<double> b = host_values(bernoulli(s, 0.3, g1, {DType::bool_, vk0()}));
  EXPECT_NEAR(mean(b), 0.3, 0.01);
  EXPECT_NE(host_values(rand(s, g1, {DType::f32, vk0()})), host_values(rand(s, g1, {DType::f32, vk0()})));
}

TEST(VulkanDevice, MixingDevicesIsAnErrorAtTheCallSite) {
  KILN_REQUIRE_VULKAN();
  Tensor a = ones(Shape{3});
  Tensor b = ones(Shape{3}, {DType::f32, vk0()});
  try {
    (void)add(a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("different devices"), std::string::npos) << e.what();
  }
}

TEST(VulkanDevice, ToMovesBetweenDevices) {
  KILN_REQUIRE_VULKAN();
  Tensor x = arange(0, 1000, 1, {DType::f32});
  Tensor on_gpu = to(x, vk0());
  EXPECT_EQ(on_gpu.device(), vk0());
  Tensor doubled = mul(on_gpu, 2.0);
  Tensor back = to(doubled, Device::cpu());
  EXPECT_EQ(back.device(), Device::cpu());
  EXPECT_TRUE(close(host_values(back), host_values(mul(x, 2.0)), {}));
  for (DType t : {DType::i64, DType::bool_}) {
    Tensor y = cast(arange(0, 10, 1, {DType::i64}), t);
    EXPECT_TRUE(close(host_values(to(to(y, vk0()), Device::cpu())), host_values(y), {}));
  }
  EXPECT_EQ(to(x, Device::cpu()).id(), x.id());
}

TEST(VulkanDevice, OppositeTransfersFromManyThreadsDoNotDeadlock) {
  KILN_REQUIRE_VULKAN();
  std::vector<std::thread> threads;
  std::vector<double> sums(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &sums] {
      const Device from = t % 2 ? vk0() : Device::cpu();
      const Device there = t % 2 ? Device::cpu() : vk0();
      Tensor x = full(Shape{257}, static_cast<double>(t), {DType::f32, from});
      for (int i = 0; i < 5; ++i) x = to(add(to(std::move(x), there), 1.0), from);
      sums[t] = host_values(x)[0];
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(sums[t], t + 5.0);
}

TEST(VulkanDevice, FailureTravelsThroughTo) {
  KILN_REQUIRE_VULKAN();
  Tensor huge = full(Shape{1ll << 38}, 1.0, {DType::f32, vk0()});  // 1 TiB
  Tensor back = to(huge, Device::cpu());
  EXPECT_THROW((void)back.to_vector<float>().get(), Error);
}

TEST(VulkanDevice, OutOfMemoryReachesTheFutureAndTheDeviceGoesOn) {
  KILN_REQUIRE_VULKAN();
  Tensor huge = full(Shape{1ll << 38}, 1.0, {DType::f32, vk0()});
  Tensor dependent = add(huge, 1.0);
  try {
    (void)dependent.to_vector<float>().get();
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(host_values(add(full(Shape{4}, 1.0, {DType::f32, vk0()}), 1.0)), std::vector<double>(4, 2.0));
  // The pool's limit gives the same error.
  set_memory_limit(vk0(), 1 << 20);
  Tensor over = full(Shape{1 << 20}, 1.0, {DType::f32, vk0()});
  EXPECT_THROW((void)over.to_vector<float>().get(), Error);
  set_memory_limit(vk0(), 0);
}

TEST(VulkanDevice, IntegerRemainderByZeroIsReported) {
  KILN_REQUIRE_VULKAN();
  Tensor a = from_vector(std::vector<std::int64_t>{5, 6, 7}, Shape{3}, vk0());
  Tensor b = from_vector(std::vector<std::int64_t>{2, 0, 3}, Shape{3}, vk0());
  try {
    (void)remainder(a, b).to_vector<std::int64_t>().get();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "remainder");
  }
  // The device goes on: the next remainder (by a nonzero scalar) is unaffected.
  EXPECT_EQ(remainder(a, 4.0).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{1, 2, 3}));
}

// As on the CPU, the failure reaches the values computed from the remainder and nothing else:
// not a sync, not an op fused into the same kernel that does not use it, not a later read.
TEST(VulkanDevice, IntegerRemainderByZeroFailsOnlyItsDependents) {
  KILN_REQUIRE_VULKAN();
  for (const bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    const bool was = fusion_enabled();
    set_fusion(fused);
    const Tensor a = from_vector(std::vector<std::int64_t>{5, 6, 7}, Shape{3}, vk0());
    const Tensor b = from_vector(std::vector<std::int64_t>{2, 0, 3}, Shape{3}, vk0());
    const Tensor r = remainder(a, b);
    const Tensor dependent = add(r, 1.0);  // with fusion on, one kernel with r and unrelated
    const Tensor unrelated = mul(a, 2.0);
    const std::uint64_t kernels = counters(vk0()).fused_kernels;
    EXPECT_NO_THROW(sync(vk0()).get());
    if (fused) {
      EXPECT_EQ(counters(vk0()).fused_kernels - kernels, 1u) << "the three ops are one kernel";
    }
    EXPECT_EQ(unrelated.to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{10, 12, 14}));
    for (const Tensor* t : {&dependent, &r, &dependent}) {
      try {
        (void)t->to_vector<std::int64_t>().get();
        ADD_FAILURE() << "expected the read to fail";
      } catch (const Error& e) {
        EXPECT_EQ(e.op(), "remainder");
        EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(sub(a, b).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{3, 6, 4}));
    set_fusion(was);
  }
}

// A dropped tensor's block stays in the pool's cache, and its chunk of device memory with it;
// release_cached_memory gives the chunk back to the driver (where another stream of the GPU, or
// another process, can have it).
TEST(VulkanDevice, ReleasingCachedMemoryGivesItsChunksBack) {
  KILN_REQUIRE_VULKAN();
  release_cached_memory(vk0());
  const std::size_t base = memory_stats(vk0()).bytes_from_device;
  constexpr std::size_t kBytes = std::size_t{160} << 20;  // more than a chunk: a chunk of its own
  {
    Tensor big = full(Shape{static_cast<std::int64_t>(kBytes / 4)}, 1.0, {DType::f32, vk0()});
    vk0().sync().get();
  }
  vk0().sync().get();
  const MemoryStats cached = memory_stats(vk0());
  EXPECT_GE(cached.bytes_reserved, cached.bytes_in_use + kBytes);
  EXPECT_GE(cached.bytes_from_device, base + kBytes);
  release_cached_memory(vk0());
  const MemoryStats released = memory_stats(vk0());
  EXPECT_EQ(released.bytes_reserved, released.bytes_in_use);
  EXPECT_LE(released.bytes_from_device, base);
}

TEST(VulkanDevice, MemoryIsPooled) {
  KILN_REQUIRE_VULKAN();
  vk0().sync().get();
  const MemoryStats before = memory_stats(vk0());
  for (int i = 0; i < 5; ++i) (void)host_values(add(full(Shape{1000}, 1.0, {DType::f32, vk0()}), 1.0));
  const MemoryStats after = memory_stats(vk0());
  EXPECT_GT(after.served_from_pool, before.served_from_pool);
}

// A recorded pass replays on the GPU as on the CPU: y = relu(x W + b) with W[i][j] = (i - 2j) / 8
// and b[j] = j - 1 (exact in f32), checked against the same map in double precision.
TEST(VulkanDevice, RecordedPassReplaysWithTheModelsValues) {
  KILN_REQUIRE_VULKAN();
  constexpr std::int64_t kIn = 6, kOut = 3;
  std::vector<float> w, b;
  for (std::int64_t i = 0; i < kIn; ++i)
    for (std::int64_t j = 0; j < kOut; ++j) w.push_back(static_cast<float>(i - 2 * j) / 8.0f);
  for (std::int64_t j = 0; j < kOut; ++j) b.push_back(static_cast<float>(j - 1));
  const Tensor wt = from_vector(w, {kIn, kOut}, vk0()), bt = from_vector(b, {kOut}, vk0());
  const RecordedPass pass =
      RecordedPass::record([&](const Tensor& x) { return relu(add(matmul(x, wt), bt)); }, {1, kIn}, DType::f32, vk0());
  for (int id = 0; id < 4; ++id) {
    const std::vector<float> x = exact_input(id, kIn);
    std::vector<float> expected(kOut);
    for (std::int64_t j = 0; j < kOut; ++j) {
      double acc = static_cast<double>(j - 1);
      for (std::int64_t i = 0; i < kIn; ++i) acc += double(x[i]) * w[i * kOut + j];
      expected[j] = static_cast<float>(std::max(acc, 0.0));
    }
    EXPECT_EQ(pass(from_vector(x, {1, kIn}, vk0())).to_vector<float>().get(), expected) << id;
  }
  // A pass on one device does not take another's input.
  try {
    (void)pass(zeros({1, kIn}));
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("on cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::test
