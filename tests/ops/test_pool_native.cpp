// The pooling ops (max_pool with its indices, avg_pool) against PyTorch on every test device
// (tests/data/gen_pool.py: kernel, stride, padding, dilation, ceil_mode and count_include_pad
// spreads, 1-D and 2-D, unbatched, rows longer than a CPU vector, ties, NaN and -inf), the
// values-only path that writes no indices, and the errors of the ops' messages. Gradients:
// tests/autograd/test_pool_grads.cpp; the decomposition rules: test_decompositions.cpp.
#include <gtest/gtest.h>

#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_window.h"
#include "support/conv_calls.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

using test::expect_error;
using test::matches;

// Max pooling picks values: exact. Average pooling divides sums of up to 12 multiples of 1/8
// (exact) once: torch's bits on the CPU and lavapipe; a GPU's f32 division may be off by an ulp.
constexpr test::Tolerance kPoolExact{0.0, 0.0};
constexpr test::Tolerance kPoolDivided{1e-6, 0.0};

test::Tolerance pool_tolerance(const std::string& op) {
  return op.rfind("max_pool", 0) == 0 ? kPoolExact : kPoolDivided;
}

class PoolNative : public ::testing::TestWithParam<Device> {};

TEST_P(PoolNative, MatchesTorch) {
  int count = 0;
  for (const auto& c : test::load_cases("pool.json")) {
    SCOPED_TRACE(c.name);
    ++count;
    const std::vector<Tensor> out = test::call_conv_op(c.op, c.attrs, {test::make_tensor(c.inputs[0], GetParam())});
    // The outputs after the values (and indices) are the gradient's.
    ASSERT_EQ(out.size() + 1, c.outputs.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      EXPECT_TRUE(matches(out[i], c.outputs[i], pool_tolerance(c.op))) << "output " << i;
  }
  EXPECT_GE(count, 40);
}

// max_pool without indices (nothing in a backward graph asks for them) writes the values alone.
TEST_P(PoolNative, ValuesWithoutIndices) {
  const auto cases = test::load_cases("pool.json");
  int count = 0;
  for (const auto& c : cases) {
    if (c.op.rfind("max_pool", 0) != 0) continue;
    SCOPED_TRACE(c.name);
    ++count;
    const Tensor x = test::make_tensor(c.inputs[0], GetParam());
    const PoolOptions o = test::pool_options(c.attrs);
    EXPECT_TRUE(matches(c.op == "max_pool1d" ? max_pool1d(x, o) : max_pool2d(x, o), c.outputs[0], kPoolExact));
  }
  EXPECT_GE(count, 20);
}

TEST_P(PoolNative, CallSiteErrors) {
  const Device d = GetParam();
  const Tensor x = zeros(Shape{1, 2, 5, 5}, {DType::f32, d});
  PoolOptions zero;
  zero.kernel = {0};
  expect_error([&] { (void)max_pool2d(x, zero); }, "max_pool2d", {"kernel [0]", "at least 1", "f32[1, 2, 5, 5]"});
  expect_error([&] { (void)avg_pool1d(zeros(Shape{1, 2, 5}, {DType::f32, d}), zero); }, "avg_pool1d", {"kernel [0]"});
  PoolOptions k2;
  k2.kernel = {2};
  expect_error([&] { (void)max_pool1d(x, k2); }, "max_pool1d", {"1 spatial dim", "f32[1, 2, 5, 5]"});
  expect_error([&] { (void)avg_pool2d(zeros(Shape{5, 5}, {DType::f32, d}), k2); }, "avg_pool2d", {"f32[5, 5]"});
  expect_error(
      [&] {
        (void)max_pool2d(zeros(Shape{1, 2, 5, 5}, {DType::i64, d}), k2);
      },
      "max_pool2d", {"floating-point", "i64[1, 2, 5, 5]"});
  expect_error(
      [&] {
        (void)max_pool2d(zeros(Shape{1, 2, 5, 5}, {DType::bool_, d}), k2);
      },
      "max_pool2d", {"floating-point", "bool[1, 2, 5, 5]"});
  PoolOptions wide;
  wide.kernel = {2, 3};
  wide.padding = {1, 2};
  expect_error([&] { (void)avg_pool2d(x, wide); }, "avg_pool2d",
               {"padding [1, 2]", "half the kernel [2, 3]", "f32[1, 2, 5, 5]"});
  PoolOptions negative = k2;
  negative.padding = {-1};
  expect_error([&] { (void)max_pool2d(x, negative); }, "max_pool2d", {"padding [-1]", "at least 0", "f32[1, 2, 5, 5]"});
  PoolOptions three;
  three.kernel = {2, 2, 2};
  expect_error([&] { (void)max_pool2d(x, three); }, "max_pool2d", {"kernel [2, 2, 2]", "one per spatial dim (2)"});
}

// A message built elsewhere than the engine (a malformed one) is refused by the shape rule,
// which names the op and the operands.
TEST_P(PoolNative, ShapeRuleErrors) {
  const Device d = GetParam();
  PoolAttrs a;
  a.dims = 2;
  a.kernel = {2, 2};
  a.stride = {2, 2};
  a.dilation = {1, 1};
  const auto submit = [&](OpKind kind, std::vector<Tensor> in, const PoolAttrs& attrs) {
    return detail::submit(kind, in.data(), in.size(), attrs.encode(kind), d);
  };
  const Tensor x = zeros(Shape{1, 2, 4, 4}, {DType::f32, d});
  expect_error(
      [&] {
        return submit(OpKind::max_pool, {zeros(Shape{2, 4, 4}, {DType::f32, d})}, a);
      },
      "max_pool", {"2 spatial dims", "f32[2, 4, 4]"});
  PoolAttrs big = a;
  big.kernel = {5, 5};
  expect_error([&] { return submit(OpKind::avg_pool, {x}, big); }, "avg_pool", {"too small", "f32[1, 2, 4, 4]"});
  PoolAttrs grad = a;
  grad.input_size = {4, 4};
  const Tensor dy = zeros(Shape{1, 2, 3, 2}, {DType::f32, d});
  expect_error([&] { return submit(OpKind::avg_pool_grad, {dy}, grad); }, "avg_pool_grad",
               {"dy f32[1, 2, 3, 2]", "[1, 2, 2, 2]", "input [4, 4]"});
  const Tensor dy2 = zeros(Shape{1, 2, 2, 2}, {DType::f32, d});
  expect_error(
      [&] {
        return submit(OpKind::max_pool_grad, {dy2, zeros(Shape{1, 2, 2, 2}, {DType::f32, d})}, grad);
      },
      "max_pool_grad", {"indices i64", "f32[1, 2, 2, 2]"});
  PoolAttrs dilated = a;
  dilated.dilation = {2, 2};
  expect_error([&] { return submit(OpKind::avg_pool, {x}, dilated); }, "avg_pool", {"no dilation"});
}

INSTANTIATE_TEST_SUITE_P(Devices, PoolNative, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
