// matmul with an operand stored transposed on Vulkan, read in place by the tiled kernel (a
// Linear layer's x Wᵀ, its weight gradient's dYᵀ X), against the CPU, whose transposed reads are
// checked against PyTorch in tests/ops (Linalg.MatmulTransposedOperandsMatchTorch, which runs on
// Vulkan too); and the capability that says so, which keeps the executor's decomposition (a copy
// of the operand) off the device unless it is withheld.
#include <random>

#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/engine/runtime.h"
#include "support/fusion_scope.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

constexpr Tol kTransposedTol{1e-4, 1e-4};

std::function<Tensor(Device)> transposed_input(Shape s, unsigned seed) {
  return [s, seed](Device d) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(s.numel()));
    for (float& x : v) x = dist(gen);
    return from_vector(v, s, d);
  };
}

::testing::AssertionResult transposed_same_as_cpu(const Shape& a, const Shape& b, MatmulOptions o) {
  return same_as_cpu({transposed_input(a, 1), transposed_input(b, 2)},
                     [o](const std::vector<Tensor>& in) { return matmul(in[0], in[1], o); }, kTransposedTol);
}

std::uint64_t vk_decomposed() {
  sync(vk0()).get();
  return counters(vk0()).ops_decomposed;
}

struct TransposedShapes {
  const char* name;
  Shape a, b;
  MatmulOptions options;
};

const TransposedShapes kTransposedShapes[] = {
    {"linear_batch1", {1, 64}, {32, 64}, {.transpose_b = true}},
    {"linear_odd", {5, 67}, {33, 67}, {.transpose_b = true}},  // scalar loads, ragged tiles
    {"linear_aligned", {8, 128}, {64, 128}, {.transpose_b = true}},
    {"linear_batched_input", {3, 7, 20}, {9, 20}, {.transpose_b = true}},  // rows of one taller product
    {"weight_grad", {6, 20}, {6, 9}, {.transpose_a = true}},
    {"both", {20, 9}, {11, 20}, {.transpose_a = true, .transpose_b = true}},
    {"batched_a_shared_b", {2, 20, 9}, {20, 11}, {.transpose_a = true}},  // batches that do not fold
    {"broadcast_both", {3, 1, 4, 2}, {1, 5, 2, 4}, {.transpose_a = true, .transpose_b = true}},
    {"empty_k", {0, 3}, {5, 0}, {.transpose_a = true, .transpose_b = true}},
};

TEST(VulkanMatmul, TransposedOperandsMatchTheCpu) {
  KILN_REQUIRE_VULKAN();
  const std::uint64_t before = vk_decomposed();
  for (const auto& c : kTransposedShapes) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(transposed_same_as_cpu(c.a, c.b, c.options));
  }
  EXPECT_EQ(vk_decomposed(), before) << "f32 operands are read transposed in place";
}

// Every tile shape maps its loads anew for a transposed operand (ragged tiles, bounds checked);
// the unchecked loads of whole tiles, once per layout of A's tile in shared memory (row- and
// k-major). (On lavapipe each kernel compiles for seconds.)
TEST(VulkanMatmul, EveryTileConfigurationReadsTransposedOperands) {
  KILN_REQUIRE_VULKAN();
  const auto& configs = vk::tile_configs();
  bool whole_tiles_of[2] = {false, false};  // by a_k_major
  for (std::size_t i = 0; i < configs.size(); ++i) {
    SCOPED_TRACE(configs[i].name);
    vk::force_tile_config(static_cast<int>(i));
    EXPECT_TRUE(transposed_same_as_cpu({45, 67}, {131, 45}, {.transpose_a = true, .transpose_b = true}));
    if (bool& done = whole_tiles_of[configs[i].a_k_major ? 1 : 0]; !done) {
      done = true;
      EXPECT_TRUE(transposed_same_as_cpu({64, 256}, {256, 64}, {.transpose_a = true, .transpose_b = true}));
    }
  }
  vk::force_tile_config(-1);
}

// A Linear layer's forward: x Wᵀ + b, then relu, fused into the tiled kernel's epilogue.
TEST(VulkanMatmul, LinearWithEpilogueReadsTheWeightTransposed) {
  KILN_REQUIRE_VULKAN();
  const FusionScope fusion(true, vk0());
  EXPECT_TRUE(same_as_cpu({transposed_input({5, 40}, 3), transposed_input({24, 40}, 4), transposed_input({24}, 5)},
                          [](const std::vector<Tensor>& in) {
                            return relu(add(matmul(in[0], in[1], {.transpose_b = true}), in[2]));
                          },
                          kTransposedTol));
}

// 16-bit operands: the tiled kernel reads them transposed too, where the device has no tensor
// cores for them (lavapipe); the product of the rounded inputs on the CPU is the reference.
TEST(VulkanMatmul, HalfTransposedOperandsMatchTheCpu) {
  KILN_REQUIRE_VULKAN();
  for (DType t : {DType::f16, DType::bf16}) {
    if (!device_supports(vk0(), t)) continue;
    SCOPED_TRACE(dtype_name(t));
    const Tensor a = transposed_input({7, 20}, 6)(vk0()), b = transposed_input({13, 20}, 7)(vk0());
    const Tensor ah = cast(a, t), bh = cast(b, t);
    const Tensor got = cast(matmul(ah, bh, {.transpose_b = true}), DType::f32);
    const Tensor want = matmul(to(cast(ah, DType::f32), Device::cpu()), to(cast(bh, DType::f32), Device::cpu()),
                               {.transpose_b = true});
    EXPECT_TRUE(close(host_values(got), host_values(want), Tol{1e-2, 1e-2}));
  }
}

// The capability steers the executor: withheld, the same product runs as a copy and a plain
// matmul (ops/decompositions.h), with the same values.
TEST(VulkanMatmul, TransposedCapabilitySteersTheDecomposition) {
  KILN_REQUIRE_VULKAN();
  DeviceBackend& backend = *Engine::get().runtime(vk0(), "test").backend;
  const DeviceCapabilities native = backend.capabilities();
  EXPECT_TRUE(native.matmul_transposed.has(DType::f32));
  const std::uint64_t before = vk_decomposed();
  DeviceCapabilities withheld = native;
  withheld.matmul_transposed = DTypeSet{};
  backend.set_capabilities(withheld);
  EXPECT_TRUE(transposed_same_as_cpu({5, 67}, {33, 67}, {.transpose_b = true}));
  EXPECT_EQ(vk_decomposed(), before + 1);
  backend.set_capabilities(native);
  EXPECT_TRUE(transposed_same_as_cpu({5, 67}, {33, 67}, {.transpose_b = true}));
  EXPECT_EQ(vk_decomposed(), before + 1);
}

}  // namespace
}  // namespace kiln::test
