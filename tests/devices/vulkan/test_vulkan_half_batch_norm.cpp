// Batch norm in training mode on f16 and bf16 tensors on Vulkan (where it runs as reductions and
// elementwise ops, ops/decompositions.cpp) against the CPU's f32 batch norm on the same rounded
// values: statistics, normalization and gradients in f32, each result rounded once, as PyTorch
// computes them. The input sits at mean 50 with unit spread, where statistics rounded to 16 bits
// before x is centred put a bf16 output 0.02-0.03 off (many units of its last place).
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "kiln/nn/functional.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

TEST(VulkanHalfBatchNorm, StatisticsAndGradientsRoundOnce) {
  KILN_REQUIRE_VULKAN();
  Generator gen(41);
  const Shape shape{8, 4, 16, 16};
  const Tensor x32 = add(randn(shape, gen), 50.0);
  const Tensor w32 = add(mul(randn({4}, gen), 0.5), 1.0);
  const Tensor b32 = randn({4}, gen);
  const Tensor seed32 = randn(shape, gen);
  for (DType t : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(t));
    // The 16-bit values, on the GPU as they are and on the CPU widened to f32.
    auto half = [&](const Tensor& v) { return require_grad(cast(to(v, vk0()), t)); };
    // (Rounded on the GPU: the CPU holds no 16-bit floats.)
    auto rounded = [&](const Tensor& v) { return to(cast(cast(to(v, vk0()), t), DType::f32), Device::cpu()); };
    auto wide = [&](const Tensor& v) { return require_grad(rounded(v)); };
    const Tensor x = half(x32), w = half(w32), b = half(b32);
    const Tensor xc = wide(x32), wc = wide(w32), bc = wide(b32);
    const Tensor y = nn::batch_norm(x, {}, {}, w, b, /*training=*/true).output;
    const Tensor yc = nn::batch_norm(xc, {}, {}, wc, bc, /*training=*/true).output;
    const Gradients got = backward(y, cast(to(seed32, vk0()), t));
    const Gradients want = backward(yc, rounded(seed32));
    // One rounding is half a unit: 2^-9 of a bf16 value, 2^-12 of an f16 one; 1.5 times that,
    // and an absolute margin beside it for values near zero (the f32 sums' order shows there).
    const double rtol = t == DType::bf16 ? 3.0 / 1024 : 3.0 / 8192;
    EXPECT_TRUE(values_close(host_values(y), host_values(yc), {rtol, 2e-3})) << "output";
    const std::vector<std::pair<Tensor, Tensor>> grads = {{x, xc}, {w, wc}, {b, bc}};
    for (std::size_t i = 0; i < grads.size(); ++i) {
      SCOPED_TRACE(i == 0 ? "dx" : i == 1 ? "dweight" : "dbias");
      EXPECT_TRUE(values_close(host_values(got.get(grads[i].first)), host_values(want.get(grads[i].second)),
                               {rtol, 2e-3}));
    }
  }
}

}  // namespace
}  // namespace kiln::test
