// Pooling (max with indices, average, adaptive) and interpolation against PyTorch
// (tests/data/gen_conv.py) on every test device, and their call-site errors.
#include <gtest/gtest.h>

#include <functional>

#include "support/conv_calls.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

using test::expect_error;

using test::matches;

// Averages divide sums of multiples of 1/8; bilinear weights are f32 products.
constexpr test::Tolerance kPoolTolerance{1e-5, 1e-5};

bool is_pool_or_resize(const std::string& op) { return op.rfind("conv", 0) != 0; }

class Pool : public ::testing::TestWithParam<Device> {};

TEST_P(Pool, MatchesTorch) {
  int count = 0;
  for (const auto& c : test::load_cases("conv.json")) {
    if (!is_pool_or_resize(c.op)) continue;
    SCOPED_TRACE(c.name);
    ++count;
    const std::vector<Tensor> out = test::call_conv_op(c.op, c.attrs, {test::make_tensor(c.inputs[0], GetParam())});
    ASSERT_EQ(out.size(), c.outputs.size());
    // Values, and for max pooling the indices (i64: exact).
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(matches(out[i], c.outputs[i], kPoolTolerance));
  }
  EXPECT_GE(count, 60);
}

// The values-only calls give the values of the _with_indices calls.
TEST_P(Pool, ValuesOnlyCallsAgree) {
  const auto cases = test::load_cases("conv.json");
  const auto input = [&](const char* name) {
    const test::RefCase* c = test::find_case(cases, name);
    EXPECT_NE(c, nullptr) << name;
    return std::make_pair(test::make_tensor(c->inputs[0], GetParam()), c);
  };
  auto [x1, c1] = input("max_pool1d_ceil");
  EXPECT_TRUE(matches(max_pool1d(x1, test::pool_options(c1->attrs)), c1->outputs[0]));
  auto [x2, c2] = input("max_pool2d_rect");
  EXPECT_TRUE(matches(max_pool2d(x2, test::pool_options(c2->attrs)), c2->outputs[0]));
  auto [x3, c3] = input("adaptive_max_pool2d_general");
  EXPECT_TRUE(matches(adaptive_max_pool2d(x3, c3->attrs.at("output_size").get<Window>()), c3->outputs[0]));
  auto [x4, c4] = input("adaptive_max_pool1d_general");
  EXPECT_TRUE(matches(adaptive_max_pool1d(x4, c4->attrs.at("output_size").get<Window>()), c4->outputs[0]));
}

TEST_P(Pool, CallSiteErrors) {
  const Device d = GetParam();
  const Tensor x = zeros(Shape{1, 2, 5, 5}, {DType::f32, d});
  PoolOptions k3;
  k3.kernel = {3};
  expect_error([&] { (void)max_pool2d(zeros(Shape{5}, {DType::f32, d}), k3); }, "max_pool2d", {"f32[5]"});
  expect_error(
      [&] {
        (void)avg_pool1d(zeros(Shape{1, 2, 5}, {DType::i64, d}), k3);
      },
      "avg_pool1d", {"floating-point", "i64[1, 2, 5]"});
  expect_error([&] { (void)max_pool2d(x, PoolOptions{}); }, "max_pool2d", {"kernel []"});
  PoolOptions wide = k3;
  wide.padding = {2};
  expect_error([&] { (void)max_pool2d(x, wide); }, "max_pool2d", {"padding [2]", "half the kernel [3]"});
  PoolOptions big;
  big.kernel = {7};
  expect_error([&] { (void)avg_pool2d(x, big); }, "avg_pool2d", {"too small", "f32[1, 2, 5, 5]", "kernel [7, 7]"});
  PoolOptions dilated = k3;
  dilated.dilation = {2};
  expect_error([&] { (void)avg_pool2d(x, dilated); }, "avg_pool2d", {"no dilation"});
  PoolOptions zero_stride = k3;
  zero_stride.stride = {0};
  expect_error(
      [&] {
        (void)max_pool1d(zeros(Shape{1, 2, 5}, {DType::f32, d}), zero_stride);
      },
      "max_pool1d", {"stride [0]", "at least 1"});
  expect_error([&] { (void)adaptive_avg_pool2d(x, {2, 3, 4}); }, "adaptive_avg_pool2d", {"output_size [2, 3, 4]"});
  expect_error([&] { (void)adaptive_max_pool2d(x, {0}); }, "adaptive_max_pool2d", {"output_size [0]"});
  expect_error(
      [&] {
        (void)adaptive_avg_pool1d(zeros(Shape{1, 2, 0}, {DType::f32, d}), {2});
      },
      "adaptive_avg_pool1d", {"empty spatial dim"});
  expect_error(
      [&] {
        (void)interpolate2d(zeros(Shape{2, 5, 5}, {DType::f32, d}), Window{3});
      },
      "interpolate2d", {"[N, C, ...]", "f32[2, 5, 5]"});
  expect_error([&] { (void)interpolate2d(x, Window{3}, InterpolateMode::nearest, true); }, "interpolate2d",
               {"align_corners"});
  expect_error([&] { (void)interpolate2d(x, std::vector<double>{0.1}); }, "interpolate2d", {"[0, 0]", "positive"});
  expect_error([&] { (void)interpolate2d(x, std::vector<double>{-2.0}); }, "interpolate2d", {"scale_factor"});
}

INSTANTIATE_TEST_SUITE_P(Devices, Pool, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
