// Backward rules of the index primitives against PyTorch (tests/data/gen_grad_index.py) and
// finite differences. engine/index.cpp passes dims through unwrapped (the shape rules wrap
// them), so each case's attrs hold the API's arguments as they are.
#include <gtest/gtest.h>

#include "autograd/rule_check_layout.h"
#include "kiln/ops/registry.h"  // op_name

namespace kiln {
namespace {

using test::RefCase;
using test::RuleCase;
using In = const std::vector<Tensor>&;

OpAttrs dim_attrs(std::int64_t dim) {
  OpAttrs a;
  a.dim = dim;
  return a;
}

RuleCase index_case(const RefCase& c) {
  const test::Json& a = c.attrs;
  if (c.op == "gather") {
    const std::int64_t dim = a.at("dim");
    return {OpKind::gather, dim_attrs(dim), [dim](In x) { return std::vector<Tensor>{gather(x[0], dim, x[1])}; }};
  }
  if (c.op == "scatter") {
    const std::int64_t dim = a.at("dim");
    return {OpKind::scatter, dim_attrs(dim),
            [dim](In x) { return std::vector<Tensor>{scatter(x[0], dim, x[1], x[2])}; }};
  }
  if (c.op == "scatter_add") {
    const std::int64_t dim = a.at("dim");
    return {OpKind::scatter_add, dim_attrs(dim),
            [dim](In x) { return std::vector<Tensor>{scatter_add(x[0], dim, x[1], x[2])}; }};
  }
  if (c.op == "index_select") {
    const std::int64_t dim = a.at("dim");
    return {OpKind::index_select, dim_attrs(dim),
            [dim](In x) { return std::vector<Tensor>{index_select(x[0], dim, x[1])}; }};
  }
  if (c.op == "masked_fill") {
    const double value = a.at("value");
    OpAttrs attrs;
    attrs.scalar = value;
    return {OpKind::masked_fill, attrs, [value](In x) { return std::vector<Tensor>{masked_fill(x[0], x[1], value)}; }};
  }
  if (c.op == "sort") {
    const std::int64_t dim = a.at("dim");
    const bool descending = a.at("descending");
    OpAttrs attrs = dim_attrs(dim);
    attrs.flag = descending;
    return {OpKind::sort, attrs, [=](In x) {
              auto [values, indices] = sort(x[0], dim, descending);
              return std::vector<Tensor>{values, indices};
            }};
  }
  if (c.op == "topk") {
    const std::int64_t k = a.at("k"), dim = a.at("dim");
    const bool largest = a.at("largest");
    OpAttrs attrs = dim_attrs(dim);
    attrs.ints = {k};
    attrs.flag = largest;
    return {OpKind::topk, attrs, [=](In x) {
              auto [values, indices] = topk(x[0], k, dim, largest);
              return std::vector<Tensor>{values, indices};
            }};
  }
  throw std::runtime_error("no index case for op " + c.op);
}

const char* const kIndexOps[] = {"gather", "scatter", "scatter_add", "index_select", "masked_fill", "sort", "topk"};

class IndexRules : public ::testing::TestWithParam<Device> {};

// The index ops save the index (or mask) input; sort and topk save their indices output.
TEST_P(IndexRules, RulesSaveTheirIndices) {
  const auto& rules = autograd::backward_rules();
  for (OpKind k : {OpKind::gather, OpKind::scatter, OpKind::scatter_add, OpKind::index_select, OpKind::masked_fill}) {
    EXPECT_NE(rules[k].fn, nullptr) << op_name(k);
    EXPECT_TRUE(rules[k].saves_inputs) << op_name(k);
    EXPECT_FALSE(rules[k].saves_outputs) << op_name(k);
  }
  for (OpKind k : {OpKind::sort, OpKind::topk}) {
    EXPECT_NE(rules[k].fn, nullptr) << op_name(k);
    EXPECT_FALSE(rules[k].saves_inputs) << op_name(k);
    EXPECT_TRUE(rules[k].saves_outputs) << op_name(k);
  }
  EXPECT_EQ(rules[OpKind::one_hot].fn, nullptr) << "one_hot's output is integer";
}

// Index gradients move values and add a few quarter-integers (repeated gather and index_select
// positions): PyTorch's values are matched to rounding, finite differences to 1e-2.
TEST_P(IndexRules, MatchTorchAndFiniteDifferences) {
  for (const char* op : kIndexOps) {
    const auto cases = test::cases_for("grad_index.json", op);
    EXPECT_GE(cases.size(), 4u) << op;
    for (const auto& c : cases) test::check_rule(c, index_case(c), GetParam());
  }
}

// Without a gradient for sort's values (only the integer indices were used), x gets none.
TEST_P(IndexRules, SortWithoutValuesGradientGivesNone) {
  Tensor x = from_vector(std::vector<float>{3, 1, 2}, Shape{3}, GetParam());
  auto [values, indices] = sort(x);
  autograd::ForwardRecord rec;
  rec.kind = OpKind::sort;
  rec.input_meta = {TensorIr{0, Shape{3}, DType::f32, TensorStatus::ReadOnly}};
  rec.outputs = {values, indices};
  const auto grads = autograd::backward_rules()[OpKind::sort].fn(rec, {Tensor{}, Tensor{}});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_FALSE(grads[0].defined());
}

INSTANTIATE_TEST_SUITE_P(Devices, IndexRules, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
