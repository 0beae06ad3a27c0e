// matmul's backward rule against PyTorch (tests/data/gen_grad_linalg.py) and finite differences.
#include <gtest/gtest.h>

#include "autograd/rule_check_layout.h"

namespace kiln {
namespace {

// matmul has no attributes: engine/linalg.cpp submits the two operands as they are.
test::RuleCase matmul_case() {
  return {OpKind::matmul, OpAttrs{},
          [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1])}; }};
}

class LinalgRules : public ::testing::TestWithParam<Device> {};

TEST_P(LinalgRules, MatmulDeclaresWhatItSaves) {
  const auto& rule = autograd::backward_rules()[OpKind::matmul];
  EXPECT_NE(rule.fn, nullptr);
  EXPECT_TRUE(rule.saves_inputs);
  EXPECT_FALSE(rule.saves_outputs);
}

// Sums of up to 4 products of quarter-integers: exact in f32, so PyTorch's values are matched
// to rounding; finite differences of a bilinear op are exact up to the outputs' f32 rounding.
TEST_P(LinalgRules, MatmulMatchesTorchAndFiniteDifferences) {
  const auto cases = test::cases_for("grad_linalg.json", "matmul");
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) test::check_rule(c, matmul_case(), GetParam());
}

// Operands entering transposed (MatmulOptions): the CPU reads them in place and records one
// matmul with the flags in its attrs, whose rule then reads its operands transposed in turn.
// (Other devices record transpose + matmul, whose rules the cases above check.)
TEST(LinalgRulesCpu, TransposedMatmulMatchesTorchAndFiniteDifferences) {
  const auto cases = test::cases_for("grad_linalg.json", "matmul_t");
  ASSERT_GE(cases.size(), 9u);
  for (const auto& c : cases) {
    const MatmulOptions o{.transpose_a = c.attrs.at("transpose_a").get<bool>(),
                          .transpose_b = c.attrs.at("transpose_b").get<bool>()};
    OpAttrs attrs;
    attrs.ints = {o.transpose_a ? 1 : 0, o.transpose_b ? 1 : 0};
    const test::RuleCase rc{OpKind::matmul, attrs,
                            [o](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1], o)}; }};
    test::check_rule(c, rc, Device::cpu());
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, LinalgRules, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
