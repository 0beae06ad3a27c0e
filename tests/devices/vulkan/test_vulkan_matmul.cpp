// matmul on Vulkan against the CPU device (itself verified against PyTorch in tests/ops):
// torch.matmul's shape rules, every configuration of the tiled kernel, f16/bf16 storage and
// matmul, the autotune cache file, and the cooperative-matrix kernel's GLSL (compiled even where
// no device can run it).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <utility>

#include "kiln/devices/vulkan/vk_autotune.h"
#include "kiln/devices/vulkan/vk_conv_gemm.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"
#include "support/fusion_scope.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/devices/vulkan/vk_shader.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

constexpr Tol kF32{1e-4, 1e-4};

std::vector<float> random_values(std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

std::function<Tensor(Device)> random_tensor(Shape s, unsigned seed) {
  return [s, seed](Device d) { return from_vector(random_values(s.numel(), seed), s, d); };
}

::testing::AssertionResult matmul_same_as_cpu(const Shape& a, const Shape& b, Tol tol = kF32) {
  return same_as_cpu(
      {random_tensor(a, 1), random_tensor(b, 2)}, [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
      tol);
}

struct ShapeCase {
  const char* name;
  Shape a, b;
};

// torch.matmul's forms, odd sizes (edges of every tile), empty dims.
const ShapeCase kCases[] = {
    {"dot", {45}, {45}},
    {"vector_matrix", {45}, {45, 67}},
    {"matrix_vector", {67, 45}, {45}},
    {"square", {64, 64}, {64, 64}},
    {"odd", {67, 45}, {45, 131}},
    {"aligned_tall", {200, 96}, {96, 136}},
    {"batched", {3, 33, 20}, {3, 20, 17}},
    {"shared_right_folded", {4, 3, 19, 28}, {28, 36}},
    {"shared_left", {19, 28}, {5, 28, 36}},
    {"broadcast_batch", {2, 1, 9, 12}, {1, 3, 12, 8}},
    {"batch_dims_merged", {2, 3, 5, 4}, {2, 3, 4, 6}},
    {"broadcast_inner_batch", {2, 3, 5, 4}, {2, 1, 4, 6}},
    {"batched_vector", {5, 7, 16}, {16}},
    {"vector_batched", {16}, {5, 16, 7}},
    {"empty_k", {6, 0}, {0, 5}},
    {"empty_m", {0, 7}, {7, 5}},
    {"empty_batch", {0, 4, 3}, {3, 2}},
};

TEST(VulkanMatmul, MatchesTheCpu) {
  KILN_REQUIRE_VULKAN();
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(matmul_same_as_cpu(c.a, c.b));
  }
}

TEST(VulkanMatmul, LargerProductsUseManyWorkgroups) {
  KILN_REQUIRE_VULKAN();
  EXPECT_TRUE(matmul_same_as_cpu({300, 257}, {257, 190}));
  EXPECT_TRUE(matmul_same_as_cpu({2, 129, 64}, {2, 64, 260}));
}

TEST(VulkanMatmul, ConfigurationsAreWellFormed) {
  for (const vk::TileConfig& c : vk::tile_configs()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.tm % 4, 0u);
    EXPECT_EQ(c.tn % 4, 0u);
    EXPECT_EQ(c.bk % 4, 0u);
    EXPECT_EQ(c.bm % c.tm, 0u);
    EXPECT_EQ(c.bn % c.tn, 0u);
    // Every thread loads whole vec4s of both tiles.
    EXPECT_EQ((c.bm * c.bk / 4) % c.threads(), 0u);
    EXPECT_EQ((c.bk * c.bn / 4) % c.threads(), 0u);
    EXPECT_TRUE(c.stages == 1 || c.stages == 2);
    EXPECT_LE(c.shared_bytes(), 49152u);
  }
  for (const vk::CoopConfig& c : vk::coop_configs()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(c.valid_for(vk::CoopShape{16, 16, 16}));
    EXPECT_TRUE(c.valid_for(vk::CoopShape{16, 8, 16}));
    EXPECT_FALSE(c.valid_for(vk::CoopShape{16, 16, 12}));
  }
}

// Every tiled configuration, forced, on shapes that take its scalar and vector paths.
TEST(VulkanMatmul, EveryTileConfigurationMatchesTheCpu) {
  KILN_REQUIRE_VULKAN();
  const auto& configs = vk::tile_configs();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    SCOPED_TRACE(configs[i].name);
    vk::force_tile_config(static_cast<int>(i));
    EXPECT_TRUE(matmul_same_as_cpu({67, 45}, {45, 131}));           // scalar A and B
    EXPECT_TRUE(matmul_same_as_cpu({130, 36}, {36, 68}));           // vec4 A and B, ragged tiles
    EXPECT_TRUE(matmul_same_as_cpu({2, 1, 9, 12}, {1, 3, 12, 8}));  // broadcast batches
    EXPECT_TRUE(matmul_same_as_cpu({5, 0}, {0, 6}));                // K = 0 writes zeros
    EXPECT_TRUE(matmul_same_as_cpu({2, 256, 64}, {2, 64, 256}));    // whole tiles: no bounds checks
    EXPECT_TRUE(matmul_same_as_cpu({128, 0}, {0, 128}));            // whole tiles but K = 0
  }
  vk::force_tile_config(-1);
}

// The autotuner's choice among f32 tilings must not change a value: every configuration sums
// each output's K products in order with one FMA each (tiles split M and N only), so they give
// the same bits, and a first run that autotunes trains as a run that reads the choice from disk.
TEST(VulkanMatmul, EveryTileConfigurationGivesTheSameBits) {
  KILN_REQUIRE_VULKAN();
  const auto& configs = vk::tile_configs();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{67, 45}, {45, 131}}, {{130, 36}, {36, 68}}, {{2, 256, 64}, {2, 64, 256}}};
  for (const auto& [a_shape, b_shape] : shapes) {
    SCOPED_TRACE(a_shape.str() + " @ " + b_shape.str());
    const Tensor a = from_vector(random_values(a_shape.numel(), 5), a_shape, vk0());
    const Tensor b = from_vector(random_values(b_shape.numel(), 6), b_shape, vk0());
    std::vector<float> first;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      vk::force_tile_config(static_cast<int>(i));
      const std::vector<float> c = matmul(a, b).to_vector<float>().get();
      if (i == 0) {
        first = c;
        continue;
      }
      ASSERT_EQ(c.size(), first.size());
      EXPECT_EQ(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)), 0)
          << configs[i].name << " differs from " << configs[0].name;
    }
  }
  vk::force_tile_config(-1);
}

// KILN_AUTOTUNE=1 times every configuration even on a software device; the result is the same.
TEST(VulkanMatmul, AutotunedChoiceMatchesTheCpu) {
  KILN_REQUIRE_VULKAN();
  const char* old = std::getenv("KILN_AUTOTUNE");
  const std::string saved = old ? old : "";
  ::setenv("KILN_AUTOTUNE", "1", 1);
  EXPECT_TRUE(matmul_same_as_cpu({70, 52}, {52, 40}));
  EXPECT_TRUE(matmul_same_as_cpu({70, 52}, {52, 40}));  // the remembered choice
  if (old)
    ::setenv("KILN_AUTOTUNE", saved.c_str(), 1);
  else
    ::unsetenv("KILN_AUTOTUNE");
}

// ---- f16 and bf16 ----

// f16/bf16 products against the CPU's f32 product of the rounded inputs; the result is rounded
// once to the half type (f32 accumulation), so the tolerance is that rounding's.
::testing::AssertionResult half_matmul_matches(DType t, const Shape& a, const Shape& b) {
  const Tol tol = t == DType::f16 ? Tol{1e-2, 1e-2} : Tol{2e-2, 2e-2};
  Tensor ha = cast(from_vector(random_values(a.numel(), 3), a, vk0()), t);
  Tensor hb = cast(from_vector(random_values(b.numel(), 4), b, vk0()), t);
  Tensor c = matmul(ha, hb);
  if (c.dtype() != t) return ::testing::AssertionFailure() << "result dtype " << dtype_name(c.dtype());
  const std::vector<float> ra = cast(ha, DType::f32).to_vector<float>().get();
  const std::vector<float> rb = cast(hb, DType::f32).to_vector<float>().get();
  const Tensor want = matmul(from_vector(ra, a), from_vector(rb, b));
  if (c.shape() != want.shape()) return ::testing::AssertionFailure() << "shape " << c.shape().str();
  return close(host_values(cast(c, DType::f32)), host_values(want), tol);
}

// An f16/bf16 product with a bias, relu and a scale after it: fused (the product's epilogue:
// one kernel where the product's kernel takes it, else the group in steps) and unfused give the
// same bits (each op rounds where it would alone). `one_kernel`: check that it was one.
::testing::AssertionResult half_epilogue_matches(DType t, const Shape& a, const Shape& b, bool one_kernel) {
  const Tensor ha = cast(from_vector(random_values(a.numel(), 5), a, vk0()), t);
  const Tensor hb = cast(from_vector(random_values(b.numel(), 6), b, vk0()), t);
  const Tensor bias = cast(from_vector(random_values(b[b.rank() - 1], 7), Shape{b[b.rank() - 1]}, vk0()), t);
  auto layer = [&] { return mul(relu(add(matmul(ha, hb), bias)), 0.3); };
  vk0().sync().get();
  const EngineCounters before = counters(vk0());
  const Tensor fused = layer();
  vk0().sync().get();
  const std::uint64_t kernels = counters(vk0()).fused_kernels - before.fused_kernels;
  const std::vector<double> got = host_values(fused);
  test::FusionScope off(false, vk0());
  if (fused.dtype() != t) return ::testing::AssertionFailure() << "result dtype " << dtype_name(fused.dtype());
  if (one_kernel && kernels != 1) return ::testing::AssertionFailure() << kernels << " fused kernels";
  return same_bits(got, host_values(layer()));
}

// The tiled kernel takes a 16-bit product's epilogue, single and batched (K not a multiple of 8:
// the tiled kernel on every device); the tensor-core kernels: below, per configuration.
TEST(VulkanMatmul, HalfProductsTakeTheirEpilogueIntoTheKernel) {
  KILN_REQUIRE_VULKAN();
  for (DType t : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(t));
    EXPECT_TRUE(half_epilogue_matches(t, {33, 20}, {20, 40}, true));
    EXPECT_TRUE(half_epilogue_matches(t, {2, 64, 36}, {2, 36, 64}, true));
  }
}

TEST(VulkanMatmul, HalfTypesMatchTheCpuProductOfRoundedInputs) {
  KILN_REQUIRE_VULKAN();
  for (DType t : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(t));
    for (const auto& c : kCases) {
      SCOPED_TRACE(c.name);
      EXPECT_TRUE(half_matmul_matches(t, c.a, c.b));
    }
    EXPECT_TRUE(half_matmul_matches(t, {136, 64}, {64, 200}));  // 16-byte loads (and the coop path)
  }
}

// The tile configurations that between them take every value of every tile parameter (tile
// sizes, outputs per thread, stages, A's layout), first come first: the 16-bit loads and stores
// depend on those values, not on their combination, whose f32 kernels are all checked above.
// (Each kernel's SPIR-V optimization takes up to 8 s on a machine without a GPU.)
std::vector<std::size_t> configs_covering_every_parameter_value() {
  std::set<std::pair<int, std::uint32_t>> seen;
  std::vector<std::size_t> picked;
  const auto& configs = vk::tile_configs();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const vk::TileConfig& c = configs[i];
    const std::uint32_t values[] = {c.bm, c.bn, c.bk, c.tm, c.tn, c.stages, c.a_k_major ? 1u : 0u};
    bool adds = false;
    for (int field = 0; field < 7; ++field) adds |= seen.insert({field, values[field]}).second;
    if (adds) picked.push_back(i);
  }
  return picked;
}

TEST(VulkanMatmul, TileConfigurationsOfEveryParameterValueHandleHalfTypes) {
  KILN_REQUIRE_VULKAN();
  const auto& configs = vk::tile_configs();
  const std::vector<std::size_t> picked = configs_covering_every_parameter_value();
  EXPECT_LT(picked.size(), configs.size());
  for (std::size_t i : picked) {
    SCOPED_TRACE(configs[i].name);
    vk::force_tile_config(static_cast<int>(i));
    EXPECT_TRUE(half_matmul_matches(DType::f16, {33, 20}, {20, 40}));
    EXPECT_TRUE(half_matmul_matches(DType::bf16, {35, 21}, {21, 19}));
    EXPECT_TRUE(half_matmul_matches(DType::f16, {128, 32}, {32, 256}));  // whole tiles
  }
  vk::force_tile_config(-1);
}

// Every cooperative-matrix configuration, forced, on ragged and batched f16 shapes (K, N
// multiples of 8); where the device has no cooperative matrices this takes the tiled kernel.
TEST(VulkanMatmul, EveryCooperativeMatrixConfigurationMatchesTheCpu) {
  KILN_REQUIRE_VULKAN();
  // Without tensor cores every product would take the tiled kernel and prove nothing here.
  if (!best_vulkan_device_info().coop_matrix_nv)
    GTEST_SKIP() << "no VK_NV_cooperative_matrix on this device (the kernels are compiled by "
                    "VulkanMatmulKernels.CooperativeMatrixKernelCompiles)";
  const auto& configs = vk::coop_configs();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    SCOPED_TRACE(configs[i].name);
    vk::force_coop_config(static_cast<int>(i));
    EXPECT_TRUE(half_matmul_matches(DType::f16, {136, 64}, {64, 200}));     // edges in M and N
    EXPECT_TRUE(half_matmul_matches(DType::f16, {300, 136}, {136, 264}));   // K not a multiple of a step
    EXPECT_TRUE(half_matmul_matches(DType::f16, {3, 40, 24}, {3, 24, 16}));  // batches, tiny tiles
    EXPECT_TRUE(half_matmul_matches(DType::f16, {256, 512}, {512, 256}));   // whole tiles only
  }
  vk::force_coop_config(-1);
}

// Every workgroup-scope configuration, forced, on f16 shapes of whole tiles (single, batched,
// broadcast right operand folded into rows); where the device lacks VK_NV_cooperative_matrix2
// the kernels are only compiled (VulkanMatmulKernels.WorkgroupCooperativeMatrixKernelCompiles).
TEST(VulkanMatmul, EveryWorkgroupCooperativeMatrixConfigurationMatchesTheCpu) {
  KILN_REQUIRE_VULKAN();
  const vk::PhysicalDeviceInfo info = best_vulkan_device_info();
  if (!info.coop_matrix_workgroup)
    GTEST_SKIP() << "no workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2) on this device";
  const auto& configs = vk::wg_coop_configs();
  std::vector<DType> dtypes = {DType::f16};
  if (info.coop_matrix_bf16) dtypes.push_back(DType::bf16);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    vk::force_wg_coop_config(static_cast<int>(i));
    for (DType t : dtypes) {
      SCOPED_TRACE(std::string(configs[i].name) + " " + dtype_name(t));
      EXPECT_TRUE(half_matmul_matches(t, {256, 512}, {512, 512}));
      EXPECT_TRUE(half_matmul_matches(t, {2, 512, 128}, {2, 128, 256}));  // batches
      EXPECT_TRUE(half_matmul_matches(t, {2, 256, 64}, {64, 256}));       // rows folded
      EXPECT_TRUE(half_matmul_matches(t, {256, 192}, {192, 256}));        // fewer steps than a trip
      EXPECT_TRUE(half_matmul_matches(t, {256, 320}, {320, 256}));        // a whole trip, then single steps
      // Not whole tiles: a tensor-load configuration runs on copies padded with zeros (the plain-
      // load one takes the usual kernel; which plan applies: PaddedPlansPadLittleWithinTheirBound).
      EXPECT_TRUE(half_matmul_matches(t, {200, 136}, {136, 264}));
      EXPECT_TRUE(half_matmul_matches(t, {2, 100, 70}, {70, 130}));  // rows folded; K, N not multiples of 8
      EXPECT_TRUE(half_matmul_matches(t, {2, 100, 72}, {2, 72, 136}));  // batched: every matrix padded
      // Broadcast batch dims: A's 3 matrices and B's 2 padded once each; C's 6 copied out word by
      // word (N = 130) and as vectors (N = 136).
      EXPECT_TRUE(half_matmul_matches(t, {3, 1, 60, 40}, {2, 40, 130}));
      EXPECT_TRUE(half_matmul_matches(t, {3, 1, 60, 40}, {2, 40, 136}));
      // A product with an epilogue (which runs in steps after these kernels): whole tiles,
      // batched, padded.
      EXPECT_TRUE(half_epilogue_matches(t, {256, 512}, {512, 512}, false));
      EXPECT_TRUE(half_epilogue_matches(t, {2, 512, 128}, {2, 128, 256}, false));
      EXPECT_TRUE(half_epilogue_matches(t, {200, 136}, {136, 264}, false));
    }
  }
  vk::force_wg_coop_config(-1);
}

// Which padded plan a product gets without timing (no device needed): the first listed
// tensor-load configuration whose padded work is within 5% of the least, within 1.3x the work for
// f16 and 4x for bf16; none for whole tiles or without tensor loads. Work counted by hand from
// the configurations' tiles.
TEST(VulkanMatmul, PaddedPlansPadLittleWithinTheirBound) {
  const vk::WgCoopShape tensor{32, 32, 16, 256, 1024, true}, plain{32, 32, 16, 256, 1024, false};
  const auto& wgs = vk::wg_coop_configs();
  auto name = [&](int i) { return i < 0 ? std::string("none") : std::string(wgs[static_cast<std::size_t>(i)].name); };
  // Only 256 invocations listed (the 128 and 64 configurations do not apply). 4000^3: 128 x 256
  // x 32 pads to 4096 x 4096 x 4000 (1.049x), as 256 x 128 does; listed first.
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 4000, 4000, 4000, DType::f16)), "wt128x256x32u8");
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 4000, 4000, 4000, DType::bf16)), "wt128x256x32u8");
  // N = 4224 (33 x 128): 256 x 128 x 32 leaves N whole (4096 x 4224 x 4000); 128 x 256 x 32
  // pads it to 4352, 3.0% more: within 5%, and listed first.
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 4000, 4224, 4000, DType::f16)), "wt128x256x32u8");
  // N = 4480 (35 x 128): 128 x 256 pads it to 4608, 2.9% more: still within. N = 2176 (17 x
  // 128): 2304 is 5.9% more, so 256 x 128.
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 4000, 4480, 4000, DType::f16)), "wt128x256x32u8");
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 4000, 2176, 4000, DType::f16)), "wt256x128x32u8");
  // Where the device lists smaller workgroups (as the H200: 32 x 16 x 16 at 128, 16 x 16 x 16 at
  // 64), 64 x 256 x 32 pads 4000^3 least (4032 x 4096 x 4000); 128 x 128 x 64, listed first,
  // pads to 4096 x 4096 x 4032, 2.4% more, and is taken.
  vk::WgCoopShape sizes = tensor;
  sizes.smaller = {vk::WgCoopGranularity{32, 16, 16, 128}, vk::WgCoopGranularity{16, 16, 16, 64}};
  EXPECT_EQ(name(vk::padded_wg_coop_config(sizes, 4000, 4000, 4000, DType::f16)), "wt128x128x64u4t128");
  // K = 4000, M = N = 2000: 128 x 128 x 64 pads to 2048 x 2048 x 4032 (1.057x); 64 x 128 x 32
  // and 64 x 256 x 32 pad M to 2048 too, K not at all: 2048 x 2048 x 4000 (1.049x) is the
  // least, and 128 x 128 x 64 is 0.8% more: taken.
  EXPECT_EQ(name(vk::padded_wg_coop_config(sizes, 2000, 2000, 4000, DType::f16)), "wt128x128x64u4t128");
  // M = 4032 (63 x 64): 64-row tiles leave it whole (4032 x 4096 x 4000), 128-row ones pad it to
  // 4096 (1.6% more) and 128 x 128 x 64 pads K too (4032): 4096 x 4096 x 4032, 2.4% more: taken.
  EXPECT_EQ(name(vk::padded_wg_coop_config(sizes, 4032, 4000, 4000, DType::f16)), "wt128x128x64u4t128");
  // M = 2112 (33 x 64), N = K = 4000: 128 rows pad to 2176 (3.0%), K to 4032 (0.8%): 3.9% more
  // than 64 x 256's 2112 x 4096 x 4000: taken. M = 1088 (17 x 64): 1152 and K 4032 are 6.7%
  // more, so 64 x 256.
  EXPECT_EQ(name(vk::padded_wg_coop_config(sizes, 2112, 4000, 4000, DType::f16)), "wt128x128x64u4t128");
  EXPECT_EQ(name(vk::padded_wg_coop_config(sizes, 1088, 4000, 4000, DType::f16)), "wt64x256x32u8t128");
  // 200 x 264 x 136: at best 256 x 384 x 160 (256 x 128 x 32), 2.19x: bf16 only.
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 200, 264, 136, DType::f16)), "none");
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 200, 264, 136, DType::bf16)), "wt256x128x32u8");
  // 10 x 10 x 10: the least padding (128 x 256 x 32) is 1,049x the work.
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 10, 10, 10, DType::bf16)), "none");
  // Whole tiles take the kernel as they are; no tensor loads, no padded plan.
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 4096, 4096, 4096, DType::f16)), "none");
  EXPECT_EQ(name(vk::padded_wg_coop_config(plain, 4000, 4000, 4000, DType::bf16)), "none");
  EXPECT_EQ(name(vk::padded_wg_coop_config(tensor, 4000, 4000, 0, DType::bf16)), "none");
}

TEST(VulkanMatmul, HalfTypesAreRejectedOnTheCpuAtTheCallSite) {
  KILN_REQUIRE_VULKAN();
  Tensor x = from_vector(std::vector<float>{1, 2}, Shape{2});
  for (DType t : {DType::f16, DType::bf16}) {
    try {
      (void)cast(x, t);
      ADD_FAILURE() << "expected kiln::Error";
    } catch (const Error& e) {
      EXPECT_EQ(e.op(), "cast");
      EXPECT_NE(std::string(e.what()).find(dtype_name(t)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
    }
    Tensor h = cast(from_vector(std::vector<float>{1, 2}, Shape{2}, vk0()), t);
    EXPECT_THROW((void)to(h, Device::cpu()), Error);
  }
  // Mixed operand dtypes are an error on every device.
  Tensor h = cast(from_vector(std::vector<float>{1, 2}, Shape{2}, vk0()), DType::f16);
  EXPECT_THROW((void)matmul(h, from_vector(std::vector<float>{1, 2}, Shape{2}, vk0())), Error);
}

// ---- the autotune cache and the cooperative-matrix kernel ----

TEST(VulkanMatmul, AutotuneCacheRoundTrip) {
  const fs::path dir = fs::temp_directory_path() / ("kiln-autotune-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string file = (dir / "sub" / "matmul_autotune.txt").string();
  {
    vk::AutotuneCache cache(file, "GPU X driver 7");
    EXPECT_FALSE(cache.lookup("f32 vavb m1024 n1024 k1024 z1").has_value());
    cache.store("f32 vavb m1024 n1024 k1024 z1", "t128x128x8_8x8");
    cache.store("f16 vavb coop m64 n64 k64 z1", "coop");
    EXPECT_EQ(cache.lookup("f16 vavb coop m64 n64 k64 z1").value(), "coop");
  }
  {
    vk::AutotuneCache again(file, "GPU X driver 7");
    EXPECT_EQ(again.lookup("f32 vavb m1024 n1024 k1024 z1").value(), "t128x128x8_8x8");
    EXPECT_EQ(again.lookup("f16 vavb coop m64 n64 k64 z1").value(), "coop");
    again.store("bf16 sasb m8 n8 k8 z4", "t32x32x16_4x4");
  }
  {
    // A second writer merges with what is on disk.
    vk::AutotuneCache third(file, "GPU X driver 7");
    EXPECT_EQ(third.lookup("bf16 sasb m8 n8 k8 z4").value(), "t32x32x16_4x4");
    EXPECT_TRUE(third.lookup("f32 vavb m1024 n1024 k1024 z1").has_value());
  }
  // Another driver's file is not trusted; garbage lines are skipped.
  EXPECT_FALSE(vk::AutotuneCache(file, "GPU X driver 8").lookup("f32 vavb m1024 n1024 k1024 z1").has_value());
  {
    std::ofstream out(file, std::ios::app);
    out << "garbage\n \n";
  }
  EXPECT_EQ(vk::AutotuneCache(file, "GPU X driver 7").lookup("f32 vavb m1024 n1024 k1024 z1").value(),
            "t128x128x8_8x8");
  EXPECT_FALSE(vk::AutotuneCache("", "memory only").lookup("x").has_value());
  fs::remove_all(dir);
  EXPECT_EQ(vk::size_bucket(1), 1u);
  EXPECT_EQ(vk::size_bucket(67), 128u);
  EXPECT_EQ(vk::size_bucket(4096), 4096u);
}

// The best device with float16 types (the kernels' prelude needs them), its own, without a disk
// cache: for compiling kernels that it may not be able to run.
class VulkanMatmulKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    KILN_REQUIRE_VULKAN();
    instance_ = vk::Instance::get();
    const int best = vk::best_device_index(instance_->devices());
    ASSERT_GE(best, 0);
    info_ = &instance_->devices()[static_cast<std::size_t>(best)];
    if (!info_->storage_16bit || !info_->shader_float16) GTEST_SKIP() << "the prelude needs float16 types";
    dev_ = std::make_unique<vk::VulkanDevice>(instance_, *info_, 99, "-");
  }
  std::shared_ptr<vk::Instance> instance_;
  const vk::PhysicalDeviceInfo* info_ = nullptr;
  std::unique_ptr<vk::VulkanDevice> dev_;
};

// The padded matmul copies f16 / bf16 operands into zero-padded whole tiles (pad_matrix16: eight
// words per thread, vector loads where a source row is 16-byte aligned) and its result out with
// the 16-bit strided copy, or with pad_matrix16 itself where C's rows are whole 16-byte vectors:
// a 3 x 5 matrix (rows unaligned) and a 2 x 16 one of row stride 24 (aligned) into padded ones,
// checked word by word, and both back out (the second both ways).
TEST_F(VulkanMatmulKernels, PaddedOperandCopiesMoveSixteenBitWords) {
  vk::VulkanDevice& dev = *dev_;
  struct Case {
    std::uint32_t rows, cols, stride, dst_rows, dst_cols;
  };
  for (const Case c : {Case{3, 5, 5, 4, 8}, Case{2, 16, 24, 3, 24}}) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols));
    std::vector<std::uint16_t> src(static_cast<std::size_t>(c.rows) * c.stride);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(0x8000u + i * 257u);
    const std::size_t padded_words = static_cast<std::size_t>(c.dst_rows) * c.dst_cols;
    BufferPtr a = dev.memory().allocate(src.size() * 2), padded = dev.memory().allocate(padded_words * 2);
    dev.write(*a, src.data(), src.size() * 2);
    vk::pad_matrix16(dev, *a, c.rows, c.cols, c.stride, *padded, c.dst_rows, c.dst_cols);
    const std::size_t out_words = static_cast<std::size_t>(c.rows) * c.cols;
    BufferPtr back = dev.memory().allocate(out_words * 2);
    vk::StridedCopy out;
    out.src = padded.get();
    out.dst = back.get();
    out.elem_bytes = 2;
    out.push_dim(c.rows, c.dst_cols, c.cols);
    out.push_dim(c.cols, 1, 1);
    vk::run_strided_copy(dev, "matmul", out);
    dev.synchronize();
    std::vector<std::uint16_t> got(padded_words), round_trip(out_words);
    dev.read(*padded, got.data(), got.size() * 2);
    dev.read(*back, round_trip.data(), round_trip.size() * 2);
    for (std::size_t r = 0; r < c.dst_rows; ++r)
      for (std::size_t k = 0; k < c.dst_cols; ++k)
        EXPECT_EQ(got[r * c.dst_cols + k], r < c.rows && k < c.cols ? src[r * c.stride + k] : 0u) << r << "," << k;
    for (std::size_t r = 0; r < c.rows; ++r)
      for (std::size_t k = 0; k < c.cols; ++k) EXPECT_EQ(round_trip[r * c.cols + k], src[r * c.stride + k]) << r << "," << k;
    // Rows of whole vectors come back out through the padding copy itself, nothing to pad.
    if (c.cols % 8 == 0) {
      BufferPtr vector_back = dev.memory().allocate(out_words * 2);
      vk::pad_matrix16(dev, *padded, c.rows, c.cols, c.dst_cols, *vector_back, c.rows, c.cols);
      dev.synchronize();
      std::vector<std::uint16_t> vector_trip(out_words);
      dev.read(*vector_back, vector_trip.data(), vector_trip.size() * 2);
      EXPECT_EQ(vector_trip, round_trip);
    }
  }
}

// Batched padded products copy every matrix of an operand (src_matrix_stride words apart) into
// consecutive padded ones, and C's matrices back out: 3 matrices of 3 x 5 (unaligned) into 3 of
// 4 x 8; 2 of 2 x 16, row stride 24 and 56 words apart (aligned, a gap between them), into 2 of
// 3 x 24, and back out into 2 of 2 x 16 through the padding copy itself.
TEST_F(VulkanMatmulKernels, PaddedCopiesMoveEveryMatrixOfABatch) {
  vk::VulkanDevice& dev = *dev_;
  struct Case {
    std::uint32_t matrices, rows, cols, stride, matrix_stride, dst_rows, dst_cols;
  };
  for (const Case c : {Case{3, 3, 5, 5, 15, 4, 8}, Case{2, 2, 16, 24, 56, 3, 24}}) {
    SCOPED_TRACE(std::to_string(c.matrices) + "x" + std::to_string(c.rows) + "x" + std::to_string(c.cols));
    std::vector<std::uint16_t> src(static_cast<std::size_t>(c.matrices) * c.matrix_stride);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(0x4000u + i * 263u);
    const std::size_t per_matrix = static_cast<std::size_t>(c.dst_rows) * c.dst_cols;
    BufferPtr a = dev.memory().allocate(src.size() * 2), padded = dev.memory().allocate(c.matrices * per_matrix * 2);
    dev.write(*a, src.data(), src.size() * 2);
    vk::pad_matrix16(dev, *a, c.rows, c.cols, c.stride, *padded, c.dst_rows, c.dst_cols, c.matrices, c.matrix_stride);
    std::vector<std::uint16_t> got(c.matrices * per_matrix);
    dev.synchronize();
    dev.read(*padded, got.data(), got.size() * 2);
    for (std::size_t m = 0; m < c.matrices; ++m)
      for (std::size_t r = 0; r < c.dst_rows; ++r)
        for (std::size_t k = 0; k < c.dst_cols; ++k)
          EXPECT_EQ(got[m * per_matrix + r * c.dst_cols + k],
                    r < c.rows && k < c.cols ? src[m * c.matrix_stride + r * c.stride + k] : 0u)
              << m << "," << r << "," << k;
    if (c.cols % 8 != 0) continue;
    const std::size_t out_words = static_cast<std::size_t>(c.matrices) * c.rows * c.cols;
    BufferPtr back = dev.memory().allocate(out_words * 2);
    vk::pad_matrix16(dev, *padded, c.rows, c.cols, c.dst_cols, *back, c.rows, c.cols, c.matrices,
                     static_cast<std::uint32_t>(per_matrix));
    std::vector<std::uint16_t> out(out_words);
    dev.synchronize();
    dev.read(*back, out.data(), out.size() * 2);
    for (std::size_t m = 0; m < c.matrices; ++m)
      for (std::size_t r = 0; r < c.rows; ++r)
        for (std::size_t k = 0; k < c.cols; ++k)
          EXPECT_EQ(out[(m * c.rows + r) * c.cols + k], src[m * c.matrix_stride + r * c.stride + k])
              << m << "," << r << "," << k;
  }
}

// The convolution's tensor-core kernel (B gathered from the image) likewise compiles and
// validates in every configuration; VulkanConv.CooperativeMatrixGatherMatchesTheOracle runs it
// where a GPU has cooperative matrices.
TEST_F(VulkanMatmulKernels, ConvolutionCooperativeMatrixKernelCompiles) {
  vk::VulkanDevice& dev = *dev_;
  for (const vk::CoopConfig& c : vk::coop_configs()) {
    for (vk::CoopShape s : {vk::CoopShape{16, 16, 16}, vk::CoopShape{16, 8, 16}}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::to_string(s.m) + "x" + std::to_string(s.n));
      std::string source;
      ASSERT_NO_THROW(source = vk::conv_coop_source(dev.prelude(), s, c));
      EXPECT_NE(source.find("mm_gather_b8(b_gather"), std::string::npos) << "B is not gathered";
      EXPECT_NO_THROW(vk::compile_glsl("conv coop", source));
    }
  }
}

// The tensor-core kernel cannot run here (lavapipe has no cooperative matrices), but glslang
// must accept it and the validator its SPIR-V, for every shape the kernel may be given.
TEST_F(VulkanMatmulKernels, CooperativeMatrixKernelCompiles) {
  const vk::PhysicalDeviceInfo& info = *info_;
  vk::VulkanDevice& dev = *dev_;
  for (const vk::CoopConfig& c : vk::coop_configs()) {
    for (vk::CoopShape s : {vk::CoopShape{16, 16, 16}, vk::CoopShape{16, 8, 16}, vk::CoopShape{16, 8, 8}}) {
      for (DType out : {DType::f16, DType::f32}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                     std::to_string(s.k) + " " + dtype_name(out));
        EXPECT_NO_THROW(vk::compile_glsl("matmul coop", vk::coop_matmul_source(dev.prelude(), s, c, out)));
      }
    }
  }
  EXPECT_THROW((void)vk::coop_matmul_source(dev.prelude(), vk::CoopShape{16, 16, 12}, vk::coop_configs().front(),
                                            DType::f16),
               Error);
  // Without the extension the device reports no shape, and matmul takes the tiled kernel.
  if (!info.coop_matrix_nv) {
    EXPECT_EQ(vk::coop_shape(dev).m, 0u);
  }
}

// The workgroup-scope kernel likewise: compiled, validated and rewritten into KHR form (the
// rewrite itself is checked in test_vulkan_spirv_coop.cpp) for every configuration.
TEST_F(VulkanMatmulKernels, WorkgroupCooperativeMatrixKernelCompiles) {
  const vk::PhysicalDeviceInfo& info = *info_;
  vk::VulkanDevice& dev = *dev_;
  vk::WgCoopShape shape{16, 16, 16, 256, 256, true};
  shape.smaller = {vk::WgCoopGranularity{16, 16, 16, 128}, vk::WgCoopGranularity{16, 16, 16, 64}};
  for (const vk::WgCoopConfig& c : vk::wg_coop_configs()) {
    ASSERT_TRUE(c.valid_for(shape)) << c.name;
    for (DType operands : {DType::f16, DType::bf16}) {
      for (DType out : {operands, DType::f32}) {
        SCOPED_TRACE(std::string(c.name) + " " + dtype_name(operands) + " -> " + dtype_name(out));
        std::vector<std::uint32_t> spirv;
        ASSERT_NO_THROW(spirv = vk::compile_glsl("matmul wg coop",
                                                 vk::wg_coop_matmul_source(dev.prelude(), shape, c, operands, out)));
        std::size_t khr_types = 0, nv_ops = 0, tensor_loads = 0, plain_loads = 0, bf16_types = 0;
        std::uint32_t local_size = 0;
        for (std::size_t w = 5; w < spirv.size() && (spirv[w] >> 16) != 0; w += spirv[w] >> 16) {
          const std::uint32_t op = spirv[w] & 0xffff;
          if (op == 16 && spirv[w + 2] == 17) local_size = spirv[w + 3];  // OpExecutionMode LocalSize x
          khr_types += op == 4456;
          nv_ops += op >= 5358 && op <= 5362;
          tensor_loads += op == 5367;
          plain_loads += op == 4457;
          bf16_types += op == 22 && (spirv[w] >> 16) == 4 && spirv[w + 2] == 16 && spirv[w + 3] == 0;
        }
        EXPECT_EQ(khr_types, out == DType::f32 ? 3u : 4u);  // A, B, accumulator (and its 16-bit copy)
        EXPECT_EQ(nv_ops, 0u);
        // Two loads per step: UNROLL steps per trip, and one more step for the remainder.
        const std::size_t loads = 2u * (c.unroll + (c.unroll > 1 ? 1u : 0u));
        EXPECT_EQ(tensor_loads, c.tensor ? loads : 0u);
        EXPECT_EQ(plain_loads, c.tensor ? 0u : loads);
        EXPECT_EQ(bf16_types, operands == DType::bf16 ? 1u : 0u);  // OpTypeFloat 16 BFloat16KHR
        EXPECT_EQ(local_size, c.threads ? c.threads : shape.threads);
      }
    }
  }
  // Whole tiles only; granularity and the A/B/output shapes must allow one use per type.
  const vk::WgCoopConfig& first = vk::wg_coop_configs().front();
  EXPECT_TRUE(first.takes(first.bm * 3, first.bn * 2, first.bk * 5));
  EXPECT_FALSE(first.takes(first.bm * 3 + 8, first.bn, first.bk));
  EXPECT_FALSE(first.takes(first.bm, first.bn, 0));
  EXPECT_FALSE((vk::WgCoopConfig{"square", 64, 64, 64}.valid_for(shape)));
  EXPECT_FALSE((vk::WgCoopConfig{"coarse", 128, 128, 32}.valid_for(vk::WgCoopShape{16, 16, 64, 256, 256, true})));
  EXPECT_FALSE((vk::WgCoopConfig{"tensor", 128, 256, 32, true}.valid_for(vk::WgCoopShape{16, 16, 16, 256, 256})));
  // Fewer invocations only where the device lists that workgroup size, at its granularity.
  const vk::WgCoopConfig small{"small", 64, 128, 32, true, 8, 128};
  EXPECT_TRUE(small.valid_for(shape));
  EXPECT_FALSE(small.valid_for(vk::WgCoopShape{16, 16, 16, 256, 256, true}));
  vk::WgCoopShape coarse = shape;
  coarse.smaller[0] = vk::WgCoopGranularity{128, 16, 16, 128};
  EXPECT_FALSE(small.valid_for(coarse));
  EXPECT_EQ(shape.at(0).threads, 256u);
  EXPECT_EQ(shape.at(64).threads, 64u);
  EXPECT_EQ(shape.at(32).threads, 0u);
  EXPECT_EQ(vk::WgCoopShape{}.at(0).threads, 0u);
  EXPECT_THROW((void)vk::wg_coop_matmul_source(dev.prelude(), vk::WgCoopShape{}, first, DType::f16, DType::f16), Error);
  EXPECT_THROW((void)vk::wg_coop_matmul_source(dev.prelude(), shape, first, DType::f16, DType::bf16), Error);
  EXPECT_THROW((void)vk::wg_coop_matmul_source(dev.prelude(), shape, first, DType::f32, DType::f32), Error);
  if (!info.coop_matrix_workgroup) {
    EXPECT_EQ(vk::wg_coop_shape(dev, DType::f16).threads, 0u);
    EXPECT_EQ(vk::wg_coop_shape(dev, DType::bf16).threads, 0u);
  }
}

}  // namespace
}  // namespace kiln::test
