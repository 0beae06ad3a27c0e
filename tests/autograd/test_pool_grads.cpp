// Gradients of max and average pooling (the max_pool_grad and avg_pool_grad ops that autograd's
// pool rules submit) against PyTorch's on every test device (tests/data/gen_pool.py: overlapping
// windows that add up, ties, NaN, -inf, ceil_mode's overhang, unbatched inputs), and against
// central finite differences on the CPU wherever no window holds a tie, NaN or infinity.
#include <gtest/gtest.h>

#include "autograd/rule_check.h"
#include "kiln/autograd/autograd.h"
#include "support/conv_calls.h"

namespace kiln {
namespace {

// Max pooling's gradients are sums of multiples of 1/8 (exact); average pooling's divide them.
constexpr test::Tolerance kMaxGradExact{0.0, 0.0};
constexpr test::Tolerance kAvgGrad{1e-6, 1e-6};

Tensor pooled(const test::RefCase& c, const Tensor& x) { return test::call_conv_op(c.op, c.attrs, {x}).at(0); }

class PoolGrads : public ::testing::TestWithParam<Device> {};

TEST_P(PoolGrads, MatchTorch) {
  int count = 0;
  for (const auto& c : test::load_cases("pool.json")) {
    SCOPED_TRACE(c.name);
    ++count;
    const Tensor x = require_grad(test::make_tensor(c.inputs[0], GetParam()));
    const Tensor seed = test::make_tensor(c.inputs[1], GetParam());
    const Gradients g = backward(pooled(c, x), seed);
    const bool max = c.op.rfind("max_pool", 0) == 0;
    EXPECT_TRUE(test::matches(g.get(x), c.outputs.back(), max ? kMaxGradExact : kAvgGrad));
  }
  EXPECT_GE(count, 40);
}

// Two forwards per input element, on the CPU.
TEST(PoolGradsCpu, MatchFiniteDifferences) {
  int count = 0;
  for (const auto& c : test::load_cases("pool.json")) {
    if (!c.attrs.value("fd", true) || test::json_shape(c.inputs[0]).numel() == 0) continue;
    SCOPED_TRACE(c.name);
    ++count;
    const Tensor x = test::make_tensor(c.inputs[0]);
    const Tensor seed = test::make_tensor(c.inputs[1]);
    const Tensor leaf = require_grad(x);
    const Gradients g = backward(pooled(c, leaf), seed);
    test::ForwardOp op;  // kind and attrs unused: finite differences only call the API
    op.api = [&c](const std::vector<Tensor>& in) { return pooled(c, in.at(0)); };
    EXPECT_TRUE(test::matches_finite_difference(g.get(leaf), op, {x}, seed, 0));
  }
  EXPECT_GE(count, 25);
}

INSTANTIATE_TEST_SUITE_P(Devices, PoolGrads, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
