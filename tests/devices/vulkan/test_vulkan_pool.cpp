// The Vulkan pooling kernels (devices/vulkan/vk_pool.cpp) against the CPU's: the same bits in
// f32, forward (values, indices) and backward, where windows overlap and their gradients add up,
// with ties and NaN; f16 and bf16 against the CPU's f32 result rounded once (both sum and
// compare in f32); and the gradient the same on every run (each input element gathers from the
// windows that cover it: no atomics). Average pooling divides, which a GPU's f32 division may
// round an ulp apart from the CPU's (lavapipe's does not): it is compared within that. PyTorch's values on every
// device: tests/ops/ test_pool_native.cpp and tests/autograd/test_pool_grads.cpp.
#include <limits>

#include "kiln/autograd/autograd.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

struct PoolCase {
  const char* name;
  Shape x;
  PoolOptions o;
  bool max;
};

// Small enough for lavapipe; rows longer than a CPU vector, stride 1 to 3, dilation, ceil_mode.
std::vector<PoolCase> pool_cases() {
  return {
      {"max_stem", {2, 3, 11, 13}, {.kernel = {3}, .stride = {2}, .padding = {1}}, true},
      {"max_overlap_s1", {1, 2, 7, 35}, {.kernel = {3}, .stride = {1}, .padding = {1}}, true},
      {"max_dilation_ceil",
       {1, 2, 9, 10},
       {.kernel = {3, 2}, .stride = {2, 3}, .padding = {1}, .dilation = {2, 1}, .ceil_mode = true},
       true},
      {"max_1d", {2, 2, 37}, {.kernel = {2}, .stride = {1}}, true},
      {"avg_stem", {2, 3, 11, 13}, {.kernel = {3}, .stride = {2}, .padding = {1}}, false},
      {"avg_exclude_ceil",
       {1, 2, 8, 7},
       {.kernel = {3, 4}, .stride = {2, 3}, .padding = {1, 2}, .ceil_mode = true, .count_include_pad = false},
       false},
      {"avg_1d_overlap", {2, 2, 33}, {.kernel = {3}, .stride = {1}, .padding = {1}}, false},
  };
}

// Values in steps of 1/4 from a few levels (ties), and a NaN in a channel of every max case.
Tensor pool_input(const PoolCase& c, Device d) {
  Generator gen(11);
  Tensor x = div(floor(mul(rand(c.x, gen), 6.0)), 4.0);
  if (c.max) {
    std::vector<float> v = x.to_vector<float>().get();
    v[v.size() / 3] = std::numeric_limits<float>::quiet_NaN();
    x = from_vector(std::move(v), c.x);
  }
  return to(x, d);
}

Tensor pooled(const PoolCase& c, const Tensor& x, Tensor* indices = nullptr) {
  const bool one_d = c.x.rank() == 3;
  if (!c.max) return one_d ? avg_pool1d(x, c.o) : avg_pool2d(x, c.o);
  const PoolResult r = one_d ? max_pool1d_with_indices(x, c.o) : max_pool2d_with_indices(x, c.o);
  if (indices) *indices = r.indices;
  return r.values;
}

struct PoolRun {
  std::vector<double> values, indices, grad;
};

PoolRun pool_run(const PoolCase& c, Device d, DType dtype) {
  const Tensor x = require_grad(cast(pool_input(c, d), dtype));
  Tensor indices;
  const Tensor y = pooled(c, x, &indices);
  Generator gen(12);
  const Tensor seed = cast(to(div(floor(mul(randn(y.shape(), gen), 8.0)), 8.0), d), dtype);
  const Gradients g = backward(y, seed);
  return {host_values(y), indices.defined() ? host_values(indices) : std::vector<double>{}, host_values(g.get(x))};
}

// Bit for bit, or for average pooling within an ulp of a division.
::testing::AssertionResult pool_agree(const PoolCase& c, const std::vector<double>& got,
                                      const std::vector<double>& want, double ulp) {
  return c.max ? same_bits(got, want) : close(got, want, Tol{ulp, 0.0});
}

TEST(VulkanPool, SameBitsAsTheCpu) {
  KILN_REQUIRE_VULKAN();
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(c.name);
    const PoolRun cpu = pool_run(c, Device::cpu(), DType::f32), gpu = pool_run(c, vk0(), DType::f32);
    EXPECT_TRUE(pool_agree(c, gpu.values, cpu.values, 3e-7)) << "values";
    EXPECT_TRUE(same_bits(gpu.indices, cpu.indices)) << "indices";
    EXPECT_TRUE(pool_agree(c, gpu.grad, cpu.grad, 1e-6)) << "gradient";
  }
}

// The gradient's bits never depend on the run (no atomics).
TEST(VulkanPool, GradientIsDeterministic) {
  KILN_REQUIRE_VULKAN();
  const PoolCase c = pool_cases()[1];
  const PoolRun first = pool_run(c, vk0(), DType::f32);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(pool_run(c, vk0(), DType::f32).grad, first.grad));
}

// 16-bit floats compute in f32 and round once: the CPU's f32 result on the same (16-bit) values,
// rounded to the dtype, bit for bit.
TEST(VulkanPool, HalfDtypesRoundTheF32ResultOnce) {
  KILN_REQUIRE_VULKAN();
  if (!device_supports(vk0(), DType::f16)) GTEST_SKIP() << "no 16-bit storage";
  for (DType t : {DType::f16, DType::bf16}) {
    for (const PoolCase& c : pool_cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(t));
      const Tensor x16 = cast(pool_input(c, vk0()), t);
      const Tensor want = cast(to(pooled(c, to(cast(x16, DType::f32), Device::cpu())), vk0()), t);
      EXPECT_TRUE(pool_agree(c, host_values(pooled(c, x16)), host_values(want), t == DType::f16 ? 0x1p-10 : 0x1p-7));
    }
  }
}

}  // namespace
}  // namespace kiln::test
