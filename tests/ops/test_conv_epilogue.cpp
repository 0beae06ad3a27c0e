// A convolution's bias is added inside the kernels the convolution launches anyway (the CPU's
// convolution kernel; elsewhere the matmul's epilogue), on every device; the elementwise ops
// after it (an activation, a scale) are one fused kernel more, not one each. Counted with the
// engine's counters. (They do not join the matmul's epilogue: the convolution's result is a
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

TEST_P(ConvEpilogue, BiasAddsNoKernelAndActivationsOne) {
  const Device d = GetParam();
  const test::FusionScope fusion(true, d);  // also under the suite's KILN_FUSION=0 run
  Generator g(1);
  const TensorOptions on{DType::f32, d};
  const Tensor x = randn(Shape{2, 3, 8, 8}, g, on), w = randn(Shape{4, 3, 3, 3}, g, on), b = randn(Shape{4}, g, on);
  const ConvOptions pad1{.padding = {1}};
  const std::uint64_t bare = kernels_for(d, [&] { return conv2d(x, w, {}, pad1); });
  EXPECT_EQ(kernels_for(d, [&] { return conv2d(x, w, b, pad1); }), bare);
  EXPECT_EQ(kernels_for(d, [&] { return relu(conv2d(x, w, b, pad1)); }), bare + 1);
  EXPECT_EQ(kernels_for(d, [&] { return add(mul(silu(conv2d(x, w, b, pad1)), 0.5), 1.0); }), bare + 1);
}

INSTANTIATE_TEST_SUITE_P(Devices, ConvEpilogue, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
