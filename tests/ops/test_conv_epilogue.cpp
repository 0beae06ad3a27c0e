// A convolution's bias is added inside the kernels the convolution launches anyway (the CPU's
// convolution kernel; elsewhere the matmul's epilogue), on every device; the elementwise ops
// after it (an activation, a scale) are one fused kernel more, not one each. Counted with the

// reshape of the product, and the planner does not fuse through a reshape.)
#include <gtest/gtest.h>

#include "support/fusion_scope.h"
#include "support/reference.h"

namespace kiln {
namespace {

class ConvEpilogue : public ::testing::TestWithParam<Device> {};

// Kernels launched to compute and read `make()`'s value.
template <class F> std::uint64_t kernels_for(Device d, F make) {
  sync(d).get();
  const std::uint64_t before = counters(d).kernels_launched;
  make().template to_vector<float>().get();
  return counters(d).kernels_launched - before;
}

TEST_P(ConvEpilogue, BiasAndActivationsAddNoKernel) {
  const Device d = GetParam();
  const test::FusionScope fusion(true, d);  // also under the suite's KILN_FUSION=0 run
  Generator g(1);
  const TensorOptions on{DType::f32, d};
  const Tensor x = randn(Shape{2, 3, 8, 8}, g, on), w = randn(Shape{4, 3, 3, 3}, g, on), b = randn(Shape{4}, g, on);
  const ConvOptions pad1{.padding = {1}};
  const std::uint64_t bare = kernels_for(d, [&] { return conv2d(x, w, {}, pad1); });
  EXPECT_EQ(kernels_for(d, [&] { return conv2d(x, w, b, pad1); }), bare);
  EXPECT_EQ(kernels_for(d, [&] { return relu(conv2d(x, w, b, pad1)); }), bare);
  EXPECT_EQ(kernels_for(d, [&] { return add(mul(silu(conv2d(x, w, b, pad1)), 0.5), 1.0); }), bare);
}

// The fused epilogue computes what the ops compute one by one, also where the group's values
// are kept (the conv's own result held alongside the activation's).
TEST_P(ConvEpilogue, FusedEqualsUnfused) {
  const Device d = GetParam();
  Generator g(2);
  const TensorOptions on{DType::f32, d};
  const Tensor x = randn(Shape{2, 4, 6, 5}, g, on), w = randn(Shape{6, 2, 3, 3}, g, on), b = randn(Shape{6}, g, on);
  const Tensor skip = randn(Shape{2, 6, 3, 3}, g, on);
  const ConvOptions opts{.stride = {2}, .padding = {1}, .groups = 2};
  auto run = [&](bool fused) {
    const test::FusionScope fusion(fused, d);
    const Tensor y = conv2d(x, w, b, opts);
    const Tensor z = add(mul(gelu(y), 0.5), skip);
    return std::pair{y.to_vector<float>().get(), z.to_vector<float>().get()};
  };
  const auto [y0, z0] = run(false);
  const auto [y1, z1] = run(true);
  ASSERT_EQ(y1.size(), y0.size());
  ASSERT_EQ(z1.size(), z0.size());
  for (std::size_t i = 0; i < y0.size(); ++i) EXPECT_FLOAT_EQ(y1[i], y0[i]) << i;
  for (std::size_t i = 0; i < z0.size(); ++i) EXPECT_NEAR(z1[i], z0[i], 1e-5f * (1 + std::abs(z0[i]))) << i;
}

INSTANTIATE_TEST_SUITE_P(Devices, ConvEpilogue, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
