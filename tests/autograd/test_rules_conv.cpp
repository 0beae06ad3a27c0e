// Backward rules of unfold and fold against PyTorch (tests/data/gen_grad_conv.py) and finite
// differences. Each case's attrs are built the way engine/unfold.cpp builds them (one value per
// spatial dim; check_rule verifies them against the API), and the forward is the API call.
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "autograd/rule_check_layout.h"

namespace kiln {
namespace {

using test::json_ints;
using test::RefCase;
using test::RuleCase;
using Ints = std::vector<std::int64_t>;

// engine/unfold.cpp's attrs: [s, kernel[s], dilation[s], padding[s], stride[s]] (+ output_size).
Ints window_ints(int s, const std::vector<Window>& params) {
  Ints ints{s};
  for (const Window& p : params)
    for (int d = 0; d < s; ++d) ints.push_back(p[p.size() == 1 ? 0 : static_cast<std::size_t>(d)]);
  return ints;
}

RuleCase conv_case(const RefCase& c) {
  const test::Json& a = c.attrs;
  const Window kernel = json_ints(a.at("kernel")), dilation = json_ints(a.at("dilation")),
               padding = json_ints(a.at("padding")), stride = json_ints(a.at("stride"));
  using In = const std::vector<Tensor>&;
  OpAttrs attrs;
  if (c.op == "unfold") {
    const double value = a.at("pad_value");
    const int s = test::json_shape(c.inputs[0]).rank() - 2;
    attrs.ints = window_ints(s, {kernel, dilation, padding, stride});
    attrs.scalar = value;
    return {OpKind::unfold, attrs,
            [=](In x) { return std::vector<Tensor>{unfold(x[0], kernel, dilation, padding, stride, value)}; }};
  }
  const Window size = json_ints(a.at("output_size"));
  attrs.ints = window_ints(static_cast<int>(size.size()), {kernel, dilation, padding, stride, size});
  return {OpKind::fold, attrs,
          [=](In x) { return std::vector<Tensor>{fold(x[0], size, kernel, dilation, padding, stride)}; }};
}

class ConvRules : public ::testing::TestWithParam<Device> {};

// Shapes and the window are all the rules read.
TEST_P(ConvRules, BothHaveARuleThatSavesNothing) {
  for (OpKind k : {OpKind::unfold, OpKind::fold}) {
    const auto& rule = autograd::backward_rules()[k];
    EXPECT_NE(rule.fn, nullptr);
    EXPECT_FALSE(rule.saves_inputs);
    EXPECT_FALSE(rule.saves_outputs);
  }
}

// The gradients only add a few quarter-integers: PyTorch's values to rounding, finite
// differences to 1e-2 (both ops are linear).
TEST_P(ConvRules, MatchTorchAndFiniteDifferences) {
  for (const char* op : {"unfold", "fold"}) {
    const auto cases = test::cases_for("grad_conv.json", op);
    EXPECT_GE(cases.size(), 6u) << op;
    for (const auto& c : cases) test::check_rule(c, conv_case(c), GetParam());
  }
}

// An integer tensor unfolded (max pooling of indices, say) takes no gradient.
TEST_P(ConvRules, IntegerInputsTakeNoGradient) {
  autograd::ForwardRecord rec;
  rec.kind = OpKind::unfold;
  rec.attrs.ints = window_ints(1, {{2}, {1}, {0}, {1}});
  rec.input_meta = {TensorIr{0, Shape{1, 1, 3}, DType::i64, TensorStatus::ReadOnly}};
  rec.output_meta = {TensorIr{0, Shape{1, 2, 2}, DType::i64, TensorStatus::NotInit}};
  const auto grads =
      autograd::backward_rules()[OpKind::unfold].fn(rec, {ones(Shape{1, 2, 2}, {DType::f32, GetParam()})});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_FALSE(grads[0].defined());
}

// Through the autograd core: the gradient of sum(unfold(x)) counts the windows that hold each
// element (conv2d's 3x3, pad 1 window: 4 in the corners, 6 on the edges, 9 inside), and
// the gradient of sum(fold(c)) is 1 for a column element inside the image, 0 in the padding.
TEST_P(ConvRules, ThroughBackward) {
  const Tensor x = require_grad(zeros(Shape{1, 1, 3, 4}, {DType::f32, GetParam()}));
  const Gradients gx = backward(sum(unfold(x, {3}, {1}, {1}, {1})));
  EXPECT_EQ(gx.get(x).to_vector<float>().get(), (std::vector<float>{4, 6, 6, 4, 6, 9, 9, 6, 4, 6, 6, 4}));

  const Tensor c = require_grad(zeros(Shape{1, 3, 3}, {DType::f32, GetParam()}));
  const Gradients gc = backward(sum(fold(c, {3}, {3}, {1}, {1}, {1})));
  EXPECT_EQ(gc.get(c).to_vector<float>().get(), (std::vector<float>{0, 1, 1, 1, 1, 1, 1, 1, 0}));
}

INSTANTIATE_TEST_SUITE_P(Devices, ConvRules, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
