// Gradients of convolution, pooling and interpolation through autograd (they are composites, so
// these test the primitives' backward rules as the composites chain them) against PyTorch
// (tests/data/gen_grad_conv_models.py), and against finite differences on the small cases.
#include <gtest/gtest.h>

#include <set>

#include "kiln/autograd/autograd.h"
#include "autograd/rule_check.h"
#include "support/conv_calls.h"

namespace kiln {
namespace {

// Seeds are f32 normals: sums of a few dozen products, in another order than torch's.
constexpr test::Tolerance kGradTolerance{1e-5, 1e-5};

// Small enough for finite differences (two forwards per input element) and for lavapipe.
const std::set<std::string> kSmall = {"conv1d_unbatched",         "conv2d_tiny",     "conv_transpose2d_tiny",
                                      "max_pool2d_tiny",          "avg_pool2d_tiny", "adaptive_max_pool2d_tiny",
                                      "interpolate_bilinear_tiny"};

test::ForwardOp forward_of(const test::RefCase& c) {
  test::ForwardOp op;  // kind and attrs unused: finite differences only call the API
  op.api = [c](const std::vector<Tensor>& in) { return test::call_conv_op(c.op, c.attrs, in).at(0); };
  return op;
}

class ConvGrads : public ::testing::TestWithParam<Device> {};

TEST_P(ConvGrads, MatchTorch) {
  const bool cpu = GetParam().kind == DeviceKind::cpu;
  int count = 0;
  for (const auto& c : test::load_cases("grad_conv_models.json")) {
    if (!cpu && !kSmall.count(c.name)) continue;
    SCOPED_TRACE(c.name);
    ++count;
    const test::GradCase gc = test::load_grad_case(c, GetParam());
    std::vector<Tensor> leaves;
    for (const Tensor& t : gc.inputs) leaves.push_back(require_grad(t));
    const Tensor out = test::call_conv_op(c.op, c.attrs, leaves).at(0);
    const Gradients g = backward(out, gc.seed);
    ASSERT_EQ(gc.expected.size(), leaves.size());
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      SCOPED_TRACE("input " + std::to_string(i));
      EXPECT_TRUE(test::matches(g.get(leaves[i]), gc.expected[i], kGradTolerance));
    }
  }
  EXPECT_GE(count, cpu ? 25 : 6);
}

// On the CPU: two forwards per input element.
TEST(ConvGradsCpu, MatchFiniteDifferences) {
  int count = 0;
  for (const auto& c : test::load_cases("grad_conv_models.json")) {
    if (!kSmall.count(c.name)) continue;
    SCOPED_TRACE(c.name);
    ++count;
    const test::GradCase gc = test::load_grad_case(c, Device::cpu());
    std::vector<Tensor> leaves;
    for (const Tensor& t : gc.inputs) leaves.push_back(require_grad(t));
    const Gradients g = backward(test::call_conv_op(c.op, c.attrs, leaves).at(0), gc.seed);
    for (std::size_t i = 0; i < leaves.size(); ++i)
      EXPECT_TRUE(test::matches_finite_difference(g.get(leaves[i]), forward_of(c), gc.inputs, gc.seed, i));
  }
  EXPECT_EQ(count, static_cast<int>(kSmall.size()));
}

INSTANTIATE_TEST_SUITE_P(Devices, ConvGrads, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
