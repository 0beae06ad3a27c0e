// Gradients of the CPU's conv ops (devices/cpu/conv_gemm.h, autograd/rules_conv.cpp) against
// those of the composites (tests/ops/conv_oracle.h), whose rules are checked against PyTorch;
// and the rules of conv, conv_input_grad and conv_weight_grad, each made of the other two,
// against finite differences.
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "autograd/rule_check.h"
#include "kiln/engine/submit.h"
#include "ops/conv_oracle.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

// Sums of up to ~1000 products of normal values, in another order than the composite's.
constexpr test::Tolerance kAgree{1e-4, 1e-4};

TEST(ConvFastPathGrads, MatchTheComposite) {
  Generator gen(21);
  for (const test::ConvShape& s : test::conv_shapes()) {
    SCOPED_TRACE(s.name);
    std::vector<Tensor> leaves;
    for (const Tensor& t : test::conv_inputs(s, gen)) leaves.push_back(require_grad(t));
    const Tensor fast = test::api_conv(s, leaves);
    const Tensor seed = randn(fast.shape(), gen);
    const Gradients g = backward(fast, seed), oracle = backward(test::composite_conv(s, leaves), seed);
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      SCOPED_TRACE("input " + std::to_string(i));
      EXPECT_TRUE(
          test::values_close(test::host_values(g.get(leaves[i])), test::host_values(oracle.get(leaves[i])), kAgree));
    }
  }
}

TEST(ConvFastPathGrads, TransposedMatchTheComposite) {
  Generator gen(23);
  for (const test::ConvTransposeShape& s : test::conv_transpose_shapes()) {
    SCOPED_TRACE(s.name);
    std::vector<Tensor> leaves;
    for (const Tensor& t : test::conv_transpose_inputs(s, gen)) leaves.push_back(require_grad(t));
    const Tensor fast = test::api_conv_transpose(s, leaves);
    const Tensor seed = randn(fast.shape(), gen);
    const Gradients g = backward(fast, seed), oracle = backward(test::composite_conv_transpose(s, leaves), seed);
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      SCOPED_TRACE("input " + std::to_string(i));
      EXPECT_TRUE(
          test::values_close(test::host_values(g.get(leaves[i])), test::host_values(oracle.get(leaves[i])), kAgree));
    }
  }
}

// A grouped conv2d with a stride, padding and dilation: [1, 4, 5, 7] * [6, 2, 3, 2] -> [1, 6, 3, 5].
struct SmallConv {
  std::vector<std::int64_t> ints{2, 2, 1, 1, 0, 1, 2, 2};  // [s, stride, padding, dilation, groups]
  ConvOptions options{.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2};
  Shape x{1, 4, 5, 7}, w{6, 2, 3, 2}, y{1, 6, 3, 5};

  test::ForwardOp op(OpKind kind, const Shape& extra) const {
    test::ForwardOp f;
    f.kind = kind;
    f.attrs.ints = ints;
    for (std::int64_t v : extra) f.attrs.ints.push_back(v);
    f.api = [f](const std::vector<Tensor>& in) { return detail::submit2(f.kind, in.at(0), in.at(1), f.attrs); };
    return f;
  }
};

void check_against_finite_differences(const test::ForwardOp& op, const std::vector<Tensor>& inputs,
                                      const Tensor& seed) {
  const autograd::ForwardRecord rec = test::record_forward(op, inputs);
  const std::vector<Tensor> grads = test::run_rule(rec, seed);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(std::string(op_name(op.kind)) + " input " + std::to_string(i));
    EXPECT_TRUE(test::matches_finite_difference(grads.at(i), op, inputs, seed, i));
  }
}

TEST(ConvFastPathGrads, RulesMatchFiniteDifferences) {
  const SmallConv c;
  Generator gen(22);
  const Tensor x = randn(c.x, gen), w = randn(c.w, gen), dy = randn(c.y, gen);

  test::ForwardOp conv = c.op(OpKind::conv, {});
  conv.api = [c](const std::vector<Tensor>& in) { return conv2d(in.at(0), in.at(1), {}, c.options); };
  check_against_finite_differences(conv, {x, w}, dy);
  check_against_finite_differences(c.op(OpKind::conv_input_grad, {5, 7}), {dy, w}, randn(c.x, gen));
  check_against_finite_differences(c.op(OpKind::conv_weight_grad, {3, 2}), {dy, x}, randn(c.w, gen));
}

TEST(ConvFastPathGrads, RulesKeepOnlyTheInputs) {
  for (OpKind k : {OpKind::conv, OpKind::conv_input_grad, OpKind::conv_weight_grad}) {
    const autograd::BackwardRule& rule = autograd::backward_rules()[k];
    EXPECT_NE(rule.fn, nullptr) << op_name(k);
    EXPECT_TRUE(rule.saves_inputs) << op_name(k);
    EXPECT_FALSE(rule.saves_outputs) << op_name(k);
  }
}

}  // namespace
}  // namespace kiln
