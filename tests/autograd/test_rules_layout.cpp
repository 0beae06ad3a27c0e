// Backward rules of the layout primitives against PyTorch (tests/data/gen_grad_layout.py) and
// finite differences. Each case's attrs are built the way engine/layout.cpp canonicalizes the
// call (check_rule verifies it against the API), and the forward is the API call itself.
#include <gtest/gtest.h>

#include <algorithm>

#include "autograd/rule_check_layout.h"
#include "kiln/ops/registry.h"  // op_name

namespace kiln {
namespace {

using test::json_ints;
using test::RefCase;
using test::RuleCase;
using Ints = std::vector<std::int64_t>;

OpAttrs ints_attrs(Ints ints) {
  OpAttrs a;
  a.ints = std::move(ints);
  return a;
}

std::int64_t wrap(std::int64_t d, int rank) { return d < 0 ? d + rank : d; }

// engine/layout.cpp's slice(): the dim wrapped, start and end clamped like Python's, one
// (start, stop, step) triple per dim.
Ints slice_triples(const Shape& in, std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  const int d = static_cast<int>(wrap(dim, in.rank()));
  const std::int64_t n = in[d];
  const auto clamp_index = [n](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + n : i, 0, n); };
  const std::int64_t lo = clamp_index(start), hi = std::max(lo, clamp_index(end));
  Ints t;
  for (int k = 0; k < in.rank(); ++k) {
    const Ints triple = k == d ? Ints{lo, hi, step} : Ints{0, in[k], 1};
    t.insert(t.end(), triple.begin(), triple.end());
  }
  return t;
}

RuleCase layout_case(const RefCase& c) {
  const test::Json& a = c.attrs;
  const Shape in = test::json_shape(c.inputs[0]);
  const int rank = in.rank();
  using In = const std::vector<Tensor>&;
  if (c.op == "reshape") {
    Ints shape = json_ints(a.at("shape")), resolved = shape;
    std::int64_t known = 1;
    for (auto s : shape) known *= s == -1 ? 1 : s;
    for (auto& s : resolved) s = s == -1 ? in.numel() / known : s;
    return {OpKind::reshape, ints_attrs(resolved), [shape](In x) { return std::vector<Tensor>{reshape(x[0], shape)}; }};
  }
  if (c.op == "permute") {
    Ints dims = json_ints(a.at("dims")), perm = dims;
    for (auto& d : perm) d = wrap(d, rank);
    return {OpKind::permute, ints_attrs(perm), [dims](In x) { return std::vector<Tensor>{permute(x[0], dims)}; }};
  }
  if (c.op == "expand") {
    Ints shape = json_ints(a.at("shape")), resolved = shape;
    const int lead = static_cast<int>(shape.size()) - rank;
    for (int i = 0; i < static_cast<int>(shape.size()); ++i)
      if (shape[i] == -1) resolved[i] = in[i - lead];
    return {OpKind::expand, ints_attrs(resolved), [shape](In x) { return std::vector<Tensor>{expand(x[0], shape)}; }};
  }
  if (c.op == "slice") {
    const std::int64_t dim = a.at("dim"), start = a.at("start"), end = a.at("end"), step = a.at("step");
    return {OpKind::slice, ints_attrs(slice_triples(in, dim, start, end, step)),
            [=](In x) { return std::vector<Tensor>{slice(x[0], dim, start, end, step)}; }};
  }
  if (c.op == "cat") {
    const std::int64_t dim = a.at("dim");
    OpAttrs attrs;
    attrs.dim = dim;  // cat passes its dim through; the shape rule wraps it
    return {OpKind::cat, attrs, [dim](In x) { return std::vector<Tensor>{cat(x, dim)}; }};
  }
  if (c.op == "flip") {
    Ints dims = json_ints(a.at("dims")), norm = dims;
    for (auto& d : norm) d = wrap(d, rank);
    return {OpKind::flip, ints_attrs(norm), [dims](In x) { return std::vector<Tensor>{flip(x[0], dims)}; }};
  }
  if (c.op == "repeat") {
    Ints reps = json_ints(a.at("repeats"));
    return {OpKind::repeat, ints_attrs(reps), [reps](In x) { return std::vector<Tensor>{repeat(x[0], reps)}; }};
  }
  if (c.op == "pad") {
    Ints pads = json_ints(a.at("pads"));
    const double value = a.at("value");
    OpAttrs attrs = ints_attrs(pads);
    attrs.scalar = value;
    return {OpKind::pad, attrs, [pads, value](In x) { return std::vector<Tensor>{pad(x[0], pads, value)}; }};
  }
  if (c.op == "tril" || c.op == "triu") {
    const std::int64_t diagonal = a.at("diagonal");
    OpAttrs attrs;
    attrs.dim = diagonal;
    if (c.op == "tril") return {OpKind::tril, attrs, [=](In x) { return std::vector<Tensor>{tril(x[0], diagonal)}; }};
    return {OpKind::triu, attrs, [=](In x) { return std::vector<Tensor>{triu(x[0], diagonal)}; }};
  }
  throw std::runtime_error("no layout case for op " + c.op);
}

const char* const kLayoutOps[] = {"reshape", "permute", "expand", "slice", "cat",
                                  "flip",    "repeat",  "pad",    "tril",  "triu"};

class LayoutRules : public ::testing::TestWithParam<Device> {};

// Layout ops keep nothing alive: shapes and attributes are all their rules read.
TEST_P(LayoutRules, EveryPrimitiveHasARuleThatSavesNothing) {
  for (OpKind k : {OpKind::reshape, OpKind::permute, OpKind::expand, OpKind::slice, OpKind::cat, OpKind::flip,
                   OpKind::repeat, OpKind::pad, OpKind::tril, OpKind::triu}) {
    const auto& rule = autograd::backward_rules()[k];
    EXPECT_NE(rule.fn, nullptr) << op_name(k);
    EXPECT_FALSE(rule.saves_inputs) << op_name(k);
    EXPECT_FALSE(rule.saves_outputs) << op_name(k);
  }
}

// Layout gradients only move or add a few quarter-integers: PyTorch's values are matched to
// rounding (rtol/atol 1e-5), finite differences to 1e-2.
TEST_P(LayoutRules, MatchTorchAndFiniteDifferences) {
  for (const char* op : kLayoutOps) {
    const auto cases = test::cases_for("grad_layout.json", op);
    EXPECT_GE(cases.size(), 2u) << op;
    for (const auto& c : cases) test::check_rule(c, layout_case(c), GetParam());
  }
}

// An integer tensor moved by a layout op takes no gradient.
TEST_P(LayoutRules, IntegerInputsTakeNoGradient) {
  autograd::ForwardRecord rec;
  rec.kind = OpKind::flip;
  rec.attrs = ints_attrs({0});
  rec.input_meta = {TensorIr{0, Shape{3}, DType::i64, TensorStatus::ReadOnly}};
  rec.output_meta = rec.input_meta;
  const auto grads = autograd::backward_rules()[OpKind::flip].fn(rec, {ones(Shape{3}, {DType::f32, GetParam()})});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_FALSE(grads[0].defined());
}

INSTANTIATE_TEST_SUITE_P(Devices, LayoutRules, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
