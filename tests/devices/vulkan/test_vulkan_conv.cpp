// The Vulkan conv op (an implicit GEMM on the tiled matmul kernel or, on GPUs with tensor cores,
// the cooperative-matrix one: devices/vulkan/vk_conv_gemm.h) and its gradient ops against the
// composite oracle (tests/ops/conv_oracle.h: unfold + matmul, whose rules are checked against
// PyTorch) run on the CPU: every tiled and cooperative-matrix configuration on ragged tiles,
// 16-bit floats, one kernel per convolution with its bias and activation, and the errors
// that only the Vulkan kernel raises. PyTorch's own values are checked on every device by
// tests/ops/test_conv.cpp and tests/autograd/test_conv_grads.cpp.
#include <cstdlib>

#include "kiln/autograd/autograd.h"
#include "kiln/devices/vulkan/vk_conv_gemm.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "ops/conv_oracle.h"
#include "support/fusion_scope.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

// Sums of up to ~1000 products of normal values, in another order than the oracle's.
constexpr Tolerance kAgree{1e-4, 1e-4};

std::vector<Tensor> on_device(const std::vector<Tensor>& host, Device d) {
  std::vector<Tensor> out;
  for (const Tensor& t : host) out.push_back(to(t, d));
  return out;
}

// The composite on the CPU, the conv op on Vulkan, from the same inputs.
::testing::AssertionResult conv_matches_oracle(const ConvShape& s, Generator& gen, Tolerance tol = kAgree) {
  const std::vector<Tensor> in = conv_inputs(s, gen);
  const Tensor want = composite_conv(s, in);
  const Tensor got = api_conv(s, on_device(in, vk0()));
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape().str() << ", oracle " << want.shape().str();
  return values_close(host_values(got), host_values(want), tol);
}

TEST(VulkanConv, MatchesTheComposite) {
  KILN_REQUIRE_VULKAN();
  Generator gen(31);
  for (const ConvShape& s : conv_shapes()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(conv_matches_oracle(s, gen));
  }
}

// Shapes whose M (output channels per group), N (windows) and K (channels x kernel) are no
// multiples of any tile, or are whole tiles of the smaller configurations.
std::vector<ConvShape> edge_shapes() {
  return {
      // M 7, N 5 x 9 = 45, K 5 x 6 = 30 (no vec4 rows of A), stride, padding and dilation per dim.
      {"ragged_2d", {2, 5, 9, 11}, {7, 5, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 1, true},
      // Two groups of M 33, N 64 (vec4 stores), K 4 x 4 = 16.
      {"groups_vec4", {1, 8, 64}, {66, 4, 4}, {1}, {2}, {1}, 2, true},
      // Whole 32 x 32 x 16 tiles: M 32, N 8 x 8 = 64, K 16 x 1 = 16; pointwise reads B as the image.
      {"pointwise_whole_tiles", {2, 16, 8, 8}, {32, 16, 1, 1}, {1}, {0}, {1}, 1, false},
  };
}

// One configuration of each code path of the tiled kernel (A row-major or k-major, one or two
// stages, BK 8 or 16): lavapipe compiles each variant in seconds, all of them would take minutes.
TEST(VulkanConv, EachTileCodePathTakesTheEdges) {
  KILN_REQUIRE_VULKAN();
  const auto& configs = vk::tile_configs();
  int tested = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const std::string name = configs[i].name;
    if (name != "t32x32x16_4x4" && name != "t128x128x8_8x8" && name != "t64x64x16_8x8_db" && name != "t128x64x16_8x8k")
      continue;
    ++tested;
    SCOPED_TRACE(name);
    vk::force_tile_config(static_cast<int>(i));
    Generator gen(32);
    for (const ConvShape& s : edge_shapes()) {
      SCOPED_TRACE(s.name);
      EXPECT_TRUE(conv_matches_oracle(s, gen));
    }
  }
  vk::force_tile_config(-1);
  EXPECT_EQ(tested, 4) << "a configuration was renamed";
}

// f16 and bf16 operands, f32 accumulation, rounded once: within the dtype's resolution of the
// f32 oracle on the same rounded inputs.
TEST(VulkanConv, HalfPrecision) {
  KILN_REQUIRE_VULKAN();
  const std::vector<ConvShape> shapes = {
      edge_shapes().front(),
      {"conv3d_depth_stride", {1, 4, 5, 6, 7}, {6, 4, 3, 3, 3}, {2, 1, 1}, {1}, {1}, 1, true},
      {"depthwise", {2, 8, 11, 12}, {8, 1, 3, 3}, {1}, {1}, {1}, 8, true},
  };
  Generator gen(33);
  for (const ConvShape& s : shapes) {
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(s.name + " " + dtype_name(t));
      // The oracle's inputs are the 16-bit ones (the CPU has no 16-bit floats: rounded on Vulkan).
      std::vector<Tensor> half, in;
      for (const Tensor& x : on_device(conv_inputs(s, gen), vk0())) {
        half.push_back(cast(x, t));
        in.push_back(to(cast(half.back(), DType::f32), Device::cpu()));
      }
      const Tensor want = composite_conv(s, in);
      const Tensor got = api_conv(s, half);
      EXPECT_EQ(got.dtype(), t);
      EXPECT_TRUE(values_close(host_values(got), host_values(want), {t == DType::f16 ? 2e-3 : 1.6e-2, 2e-2}));
    }
  }
}

// Both gradients of f16 and bf16 convolutions against the f32 composite on the same rounded
// values, within what rounding the result once allows (half a unit in the last place, plus the
// f32 sums' other order): f32 accumulation throughout, as PyTorch's. Four images, the last two
// the first two again with the seed times -0.96875, so that the weight gradient's per-image
// products nearly cancel: a product rounded to 16 bits before the sum over images is off by
// half a unit of the product, which is many units of the sum. Stride 1 takes the input gradient
// as a convolution; the strided shape takes the columns and fold (whose overlapping windows sum).
TEST(VulkanConv, HalfPrecisionGradients) {
  KILN_REQUIRE_VULKAN();
  const std::vector<ConvShape> shapes = {
      {"ragged_2d_strided_fold", {4, 5, 9, 11}, {7, 5, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 1, true},
      {"groups_vec4", {4, 8, 64}, {66, 4, 4}, {1}, {2}, {1}, 2, true},
  };
  Generator gen(36);
  for (const ConvShape& s : shapes) {
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(s.name + " " + dtype_name(t));
      const std::vector<Tensor> host = conv_inputs(s, gen);
      const Tensor first_half = slice(host[0], 0, 0, s.x[0] / 2);
      std::vector<Tensor> values = {cat({first_half, first_half}, 0)};
      values.insert(values.end(), host.begin() + 1, host.end());
      std::vector<Tensor> half, in;
      for (const Tensor& x : on_device(values, vk0())) {
        half.push_back(require_grad(cast(x, t)));
        in.push_back(require_grad(to(cast(cast(x, t), DType::f32), Device::cpu())));
      }
      const Tensor y = api_conv(s, half);
      Shape half_shape = y.shape();
      half_shape[0] = s.x[0] / 2;
      const Tensor seed_half = randn(half_shape, gen, {DType::f32, vk0()});
      const Tensor seed = cast(cat({seed_half, mul(seed_half, -0.96875)}, 0), t);
      const Gradients got = backward(y, seed);
      const Gradients want = backward(composite_conv(s, in), to(cast(seed, DType::f32), Device::cpu()));
      // Half a unit is at most 2^-8 of a bf16 value (2^-11 of an f16 one): 1.5 times that, and
      // 1e-4 beside it for results near zero, where the f32 sums' order shows.
      const double rtol = t == DType::bf16 ? 3.0 / 512 : 3.0 / 4096;
      for (std::size_t i = 0; i < half.size(); ++i) {
        SCOPED_TRACE("input " + std::to_string(i));
        EXPECT_TRUE(values_close(host_values(got.get(half[i])), host_values(want.get(in[i])), {rtol, 1e-4}));
      }
    }
  }
}

// Kernels launched to compute and read `make()`'s value.
template <class F>
std::uint64_t kernels_for(F make) {
  sync(vk0()).get();
  const std::uint64_t before = counters(vk0()).kernels_launched;
  make().template to_vector<float>().get();
  return counters(vk0()).kernels_launched - before;
}

// The explicit GEMM (unfold + matmul + bias add), which the autotuner times for 16-bit floats on
// GPUs with tensor cores, forced by name here: lavapipe has none.
TEST(VulkanConv, ExplicitGemmOf16BitFloats) {
  KILN_REQUIRE_VULKAN();
  const char* old = std::getenv("KILN_MATMUL_CONFIG");
  const std::string saved = old ? old : "";
  Generator gen(36);
  const ConvShape s0 = edge_shapes()[0];
  std::vector<Tensor> in0;
  for (const Tensor& x : on_device(conv_inputs(s0, gen), vk0())) in0.push_back(cast(x, DType::f16));
  // The explicit GEMM is seen by its columns: memory the implicit one never takes.
  const auto peak = [&] {
    sync(vk0()).get();
    const std::size_t before = memory_stats(vk0()).bytes_in_use;
    reset_peak_memory(vk0());
    const Tensor y = api_conv(s0, in0);
    sync(vk0()).get();
    return memory_stats(vk0()).peak_in_use - before;
  };
  const std::size_t implicit = peak();
  ::setenv("KILN_MATMUL_CONFIG", "explicit", 1);
  EXPECT_GE(peak(), implicit + 2 * 30 * 45 * 2) << "the columns [2, 30, 45] of f16";
  for (const ConvShape& s : {edge_shapes()[0], edge_shapes()[2]}) {  // gathered columns; the image itself
    SCOPED_TRACE(s.name);
    std::vector<Tensor> half, in;
    for (const Tensor& x : on_device(conv_inputs(s, gen), vk0())) {
      half.push_back(cast(x, DType::f16));
      in.push_back(to(cast(half.back(), DType::f32), Device::cpu()));
    }
    EXPECT_TRUE(values_close(host_values(api_conv(s, half)), host_values(composite_conv(s, in)), {2e-3, 2e-2}));
  }
  if (old)
    ::setenv("KILN_MATMUL_CONFIG", saved.c_str(), 1);
  else
    ::unsetenv("KILN_MATMUL_CONFIG");
}

// Every cooperative-matrix configuration, forced, on f16 convolutions whose columns' K and
// windows are multiples of 8: padded, strided and dilated, grouped, and pointwise (B read as
// it is), with the bias as an add after the product.
// Where the device has no cooperative matrices (lavapipe) the kernels are only compiled
// (VulkanMatmulKernels.ConvolutionCooperativeMatrixKernelCompiles).
TEST(VulkanConv, CooperativeMatrixGatherMatchesTheOracle) {
  KILN_REQUIRE_VULKAN();
  if (!best_vulkan_device_info().coop_matrix_nv) GTEST_SKIP() << "no VK_NV_cooperative_matrix on this device";
  const std::vector<ConvShape> shapes = {
      {"padded", {2, 8, 10, 12}, {16, 8, 3, 3}, {1}, {1}, {1}, 1, true},                // K 72, L 120
      {"strided_dilated", {1, 16, 19, 18}, {24, 16, 3, 3}, {2}, {1}, {2}, 1, true},   // L 9 x 8
      {"grouped", {2, 16, 8, 8}, {32, 8, 3, 3}, {1}, {1}, {1}, 2, true},               // K 72 a group
      {"pointwise", {2, 16, 8, 8}, {24, 16, 1, 1}, {1}, {0}, {1}, 1, true},            // B is the image
      {"no_bias", {1, 8, 16, 16}, {136, 8, 3, 3}, {1}, {1}, {1}, 1, false},            // M over a tile
  };
  Generator gen(41);
  const auto& configs = vk::coop_configs();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    vk::force_coop_config(static_cast<int>(i));
    for (const ConvShape& s : shapes) {
      SCOPED_TRACE(std::string(configs[i].name) + " " + s.name);
      std::vector<Tensor> half, in;
      for (const Tensor& x : on_device(conv_inputs(s, gen), vk0())) {
        half.push_back(cast(x, DType::f16));
        in.push_back(to(cast(half.back(), DType::f32), Device::cpu()));
      }
      const Tensor want = composite_conv(s, in);
      EXPECT_TRUE(values_close(host_values(api_conv(s, half)), host_values(want), {2e-3, 2e-2}));
      // The tensor-core plan ran (once: the configuration is forced, nothing is timed).
      const std::uint64_t before = vk::coop_convolutions();
      (void)api_conv(s, half);
      sync(vk0()).get();
      EXPECT_EQ(vk::coop_convolutions() - before, 1u);
    }
  }
  vk::force_coop_config(-1);
}

// A convolution is one kernel: no columns are written (unfold) and read back (matmul); its bias
// and the activation after it run in that kernel's store.
TEST(VulkanConv, OneKernelWithBiasAndActivation) {
  KILN_REQUIRE_VULKAN();
  const FusionScope fusion(true, vk0());
  Generator g(34);
  const TensorOptions on{DType::f32, vk0()};
  const Tensor x = randn(Shape{2, 3, 9, 7}, g, on), w = randn(Shape{5, 3, 3, 3}, g, on), b = randn(Shape{5}, g, on);
  const ConvOptions pad1{.padding = {1}};
  const std::uint64_t read = kernels_for([&] { return add(x, 1.0); }) - 1;  // what reading costs
  EXPECT_EQ(kernels_for([&] { return conv2d(x, w, {}, pad1); }), read + 1);
  EXPECT_EQ(kernels_for([&] { return relu(conv2d(x, w, b, pad1)); }), read + 1);
  // The fused result is the oracle's.
  const std::vector<Tensor> host = {to(x, Device::cpu()), to(w, Device::cpu()), to(b, Device::cpu())};
  ConvShape s{"fused", x.shape(), w.shape(), {1}, {1}, {1}, 1, true};
  EXPECT_TRUE(values_close(host_values(relu(conv2d(x, w, b, pad1))),
                           host_values(relu(reshape(composite_conv(s, host), {2, 5, 9, 7}))), kAgree));
}

// conv_input_grad and conv_weight_grad (and the bias's sum) against the gradients of the
// composite, whose backward rules (unfold, matmul) are checked against PyTorch.
TEST(VulkanConv, GradientsMatchTheComposite) {
  KILN_REQUIRE_VULKAN();
  Generator gen(35);
  const auto& all = conv_shapes();
  std::vector<ConvShape> shapes(all.begin(), all.end());
  shapes.push_back(edge_shapes().front());
  for (const ConvShape& s : shapes) {
    SCOPED_TRACE(s.name);
    const std::vector<Tensor> host = conv_inputs(s, gen);
    std::vector<Tensor> cpu, vk;
    for (const Tensor& t : host) cpu.push_back(require_grad(t));
    for (const Tensor& t : on_device(host, vk0())) vk.push_back(require_grad(t));
    const Tensor y = api_conv(s, vk);
    const Tensor seed = randn(y.shape(), gen);
    const Gradients got = backward(y, to(seed, vk0())), want = backward(composite_conv(s, cpu), seed);
    for (std::size_t i = 0; i < host.size(); ++i) {
      SCOPED_TRACE("input " + std::to_string(i));
      EXPECT_TRUE(values_close(host_values(got.get(vk[i])), host_values(want.get(cpu[i])), kAgree));
    }
  }
}

// The kernel's coordinates are 32-bit: a window reaching past 2^31 (fine on the CPU) is refused
// through the result's future, naming the op and the input.
TEST(VulkanConv, WindowsBeyond32BitsAreAClearError) {
  KILN_REQUIRE_VULKAN();
  const std::int64_t far = std::int64_t{1} << 31;
  const Tensor x = ones(Shape{1, 1, 1}, {DType::f32, vk0()}), w = ones(Shape{1, 1, 2}, {DType::f32, vk0()});
  const Tensor y = conv1d(x, w, {}, ConvOptions{.padding = {far / 2}, .dilation = {far}});
  try {
    (void)y.to_vector<float>().get();
    ADD_FAILURE() << "the conv ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "conv") << e.what();
    EXPECT_NE(std::string(e.what()).find("2^31"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[1, 1, 1]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::test
