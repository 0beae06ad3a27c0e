// Backward rules of the elementwise family against PyTorch (tests/data/gen_grad_elementwise.py
// -> grad_elementwise.json) and against finite differences of the kiln forward op.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "autograd/rule_check.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

using test::ForwardOp;
using test::RefCase;

using Unary = Tensor (*)(Tensor);
struct BinaryForms {
  Tensor (*tensors)(Tensor, Tensor);
  Tensor (*rhs)(Tensor, double);
  Tensor (*lhs)(double, Tensor);
};

const std::map<std::string, Unary>& unary_ops() {
  static const std::map<std::string, Unary> ops = {
      {"neg", kiln::neg},         {"abs", kiln::abs},
      {"exp", kiln::exp},         {"log", kiln::log},
      {"log1p", kiln::log1p},     {"expm1", kiln::expm1},
      {"sqrt", kiln::sqrt},       {"rsqrt", kiln::rsqrt},
      {"square", kiln::square},   {"reciprocal", kiln::reciprocal},
      {"sin", kiln::sin},         {"cos", kiln::cos},
      {"tan", kiln::tan},         {"tanh", kiln::tanh},
      {"sigmoid", kiln::sigmoid}, {"erf", kiln::erf},
      {"relu", kiln::relu},       {"gelu", kiln::gelu},
      {"silu", kiln::silu},       {"softplus", kiln::softplus},
      {"floor", kiln::floor},     {"ceil", kiln::ceil},
      {"round", kiln::round},     {"sign", kiln::sign},
  };
  return ops;
}

// clang-format off
#define KILN_FORMS(name)                                                        \
  {                                                                             \
    #name, BinaryForms {                                                        \
      [](Tensor a, Tensor b) { return kiln::name(std::move(a), std::move(b)); }, \
          [](Tensor a, double s) { return kiln::name(std::move(a), s); },        \
          [](double s, Tensor b) { return kiln::name(s, std::move(b)); }         \
    }                                                                           \
  }
const std::map<std::string, BinaryForms>& binary_ops() {
  static const std::map<std::string, BinaryForms> ops = {
      KILN_FORMS(add), KILN_FORMS(sub),     KILN_FORMS(mul),     KILN_FORMS(div),   KILN_FORMS(pow),
      KILN_FORMS(remainder), KILN_FORMS(maximum), KILN_FORMS(minimum), KILN_FORMS(atan2),
  };
  return ops;
}
#undef KILN_FORMS
// clang-format on

// The ForwardOp of a case: the API call and the attrs engine/elementwise.cpp puts in its message.
ForwardOp forward_of(const RefCase& c) {
  ForwardOp op;
  op.kind = test::op_kind_named(c.op);
  const test::Json& a = c.attrs;
  if (auto u = unary_ops().find(c.op); u != unary_ops().end()) {
    op.api = [f = u->second](const std::vector<Tensor>& x) { return f(x[0]); };
  } else if (auto b = binary_ops().find(c.op); b != binary_ops().end()) {
    const BinaryForms forms = b->second;
    if (a.contains("side")) {
      const double s = a.at("scalar").get<double>();
      const bool rhs = a.at("side") == "rhs";
      op.attrs.scalar = s;
      op.attrs.scalar_side = rhs ? ScalarSide::Rhs : ScalarSide::Lhs;
      op.api = [forms, s, rhs](const std::vector<Tensor>& x) { return rhs ? forms.rhs(x[0], s) : forms.lhs(s, x[0]); };
    } else {
      op.api = [forms](const std::vector<Tensor>& x) { return forms.tensors(x[0], x[1]); };
    }
  } else if (c.op == "where") {
    op.api = [](const std::vector<Tensor>& x) { return where(x[0], x[1], x[2]); };
  } else if (c.op == "clamp") {
    std::optional<double> lo, hi;
    if (a.contains("min")) lo = a.at("min").get<double>();
    if (a.contains("max")) hi = a.at("max").get<double>();
    op.attrs.scalar = lo.value_or(0.0);
    op.attrs.scalar2 = hi.value_or(0.0);
    op.attrs.ints = {lo ? 1 : 0, hi ? 1 : 0};
    op.api = [lo, hi](const std::vector<Tensor>& x) { return clamp(x[0], lo, hi); };
  } else if (c.op == "cast") {
    const DType to = test::parse_dtype(a.at("dtype").get<std::string>());
    op.attrs.dtype = to;
    op.api = [to](const std::vector<Tensor>& x) { return cast(x[0], to); };
  } else {
    throw std::runtime_error("no kiln op for gradient case op " + c.op);
  }
  return op;
}

test::Tolerance torch_tolerance(const std::string& op) {
  // pow and atan2 go through exp/log and a quotient: a few ulps more than the others.
  if (op == "pow" || op == "atan2" || op == "gelu" || op == "silu") return {1e-4, 1e-5};
  return {1e-5, 1e-6};
}

class ElementwiseRules : public ::testing::TestWithParam<Device> {
 protected:
  void check_op(const std::string& op) {
    const std::vector<RefCase> cases = test::cases_for("grad_elementwise.json", op);
    ASSERT_FALSE(cases.empty()) << "no gradient cases for " << op;
    for (const RefCase& c : cases) {
      SCOPED_TRACE(c.name);
      test::check_rule(forward_of(c), test::load_grad_case(c, GetParam()), torch_tolerance(op));
    }
  }
};

TEST_P(ElementwiseRules, neg) { check_op("neg"); }
TEST_P(ElementwiseRules, abs) { check_op("abs"); }
TEST_P(ElementwiseRules, exp) { check_op("exp"); }
TEST_P(ElementwiseRules, log) { check_op("log"); }
TEST_P(ElementwiseRules, log1p) { check_op("log1p"); }
TEST_P(ElementwiseRules, expm1) { check_op("expm1"); }
TEST_P(ElementwiseRules, sqrt) { check_op("sqrt"); }
TEST_P(ElementwiseRules, rsqrt) { check_op("rsqrt"); }
TEST_P(ElementwiseRules, square) { check_op("square"); }
TEST_P(ElementwiseRules, reciprocal) { check_op("reciprocal"); }
TEST_P(ElementwiseRules, sin) { check_op("sin"); }
TEST_P(ElementwiseRules, cos) { check_op("cos"); }
TEST_P(ElementwiseRules, tan) { check_op("tan"); }
TEST_P(ElementwiseRules, tanh) { check_op("tanh"); }
TEST_P(ElementwiseRules, sigmoid) { check_op("sigmoid"); }
TEST_P(ElementwiseRules, erf) { check_op("erf"); }
TEST_P(ElementwiseRules, relu) { check_op("relu"); }
TEST_P(ElementwiseRules, gelu) { check_op("gelu"); }
TEST_P(ElementwiseRules, silu) { check_op("silu"); }
TEST_P(ElementwiseRules, softplus) { check_op("softplus"); }
TEST_P(ElementwiseRules, floor) { check_op("floor"); }
TEST_P(ElementwiseRules, ceil) { check_op("ceil"); }
TEST_P(ElementwiseRules, round) { check_op("round"); }
TEST_P(ElementwiseRules, sign) { check_op("sign"); }
TEST_P(ElementwiseRules, cast) { check_op("cast"); }
TEST_P(ElementwiseRules, add) { check_op("add"); }
TEST_P(ElementwiseRules, sub) { check_op("sub"); }
TEST_P(ElementwiseRules, mul) { check_op("mul"); }
TEST_P(ElementwiseRules, div) { check_op("div"); }
TEST_P(ElementwiseRules, pow) { check_op("pow"); }
TEST_P(ElementwiseRules, remainder) { check_op("remainder"); }
TEST_P(ElementwiseRules, maximum) { check_op("maximum"); }
TEST_P(ElementwiseRules, minimum) { check_op("minimum"); }
TEST_P(ElementwiseRules, atan2) { check_op("atan2"); }
TEST_P(ElementwiseRules, where) { check_op("where"); }
TEST_P(ElementwiseRules, clamp) { check_op("clamp"); }

// An f32 -> f32 cast never reaches the engine (the API returns its input), but a recorded one
// would still pass the gradient through unchanged.
TEST_P(ElementwiseRules, CastToSameDtypeIsIdentity) {
  autograd::ForwardRecord rec;
  rec.kind = OpKind::cast;
  rec.attrs.dtype = DType::f32;
  rec.input_meta = {TensorIr{0, Shape{3}, DType::f32, TensorStatus::ReadOnly}};
  rec.output_meta = rec.input_meta;
  const Tensor seed = from_vector(std::vector<float>{1.5f, -2.0f, 0.25f}, Shape{3}, GetParam());
  const std::vector<Tensor> g = test::run_rule(rec, seed);
  ASSERT_TRUE(g[0].defined());
  EXPECT_EQ(g[0].to_vector<float>().get(), (std::vector<float>{1.5f, -2.0f, 0.25f}));
}

// A rule given no output gradient returns no input gradients.
TEST_P(ElementwiseRules, NoIncomingGradient) {
  for (OpKind k : {OpKind::exp, OpKind::mul, OpKind::where, OpKind::clamp}) {
    autograd::ForwardRecord rec;
    rec.kind = k;
    const std::size_t n = k == OpKind::where ? 3 : k == OpKind::mul ? 2 : 1;
    rec.input_meta.assign(n, TensorIr{0, Shape{2}, DType::f32, TensorStatus::ReadOnly});
    rec.attrs.ints = {1, 0};
    const std::vector<Tensor> g = autograd::backward_rules()[k].fn(rec, {Tensor()});
    ASSERT_EQ(g.size(), n) << op_name(k);
    for (const Tensor& t : g) EXPECT_FALSE(t.defined()) << op_name(k);
  }
}

// Comparisons, logical ops, isnan/isinf/logical_not have no rule; every differentiable op keeps
// only what its derivative needs.
TEST(ElementwiseRuleTable, DifferentiabilityAndSaves) {
  const auto& t = autograd::backward_rules();
  for (OpKind k : {OpKind::eq, OpKind::ne, OpKind::lt, OpKind::le, OpKind::gt, OpKind::ge, OpKind::logical_and,
                   OpKind::logical_or, OpKind::logical_xor, OpKind::isnan, OpKind::isinf, OpKind::logical_not})
    EXPECT_EQ(t[k].fn, nullptr) << op_name(k);
  for (OpKind k : {OpKind::neg, OpKind::add, OpKind::sub, OpKind::cast, OpKind::floor, OpKind::sign}) {
    EXPECT_NE(t[k].fn, nullptr) << op_name(k);
    EXPECT_FALSE(t[k].saves_inputs || t[k].saves_outputs) << op_name(k) << " needs neither input nor output";
  }
  for (OpKind k : {OpKind::exp, OpKind::sqrt, OpKind::tanh, OpKind::sigmoid, OpKind::relu, OpKind::reciprocal})
    EXPECT_TRUE(t[k].saves_outputs && !t[k].saves_inputs) << op_name(k) << " needs only its output";
  for (OpKind k : {OpKind::log, OpKind::sin, OpKind::gelu, OpKind::mul, OpKind::where, OpKind::clamp})
    EXPECT_TRUE(t[k].saves_inputs && !t[k].saves_outputs) << op_name(k) << " needs only its inputs";
}

INSTANTIATE_TEST_SUITE_P(Devices, ElementwiseRules, ::testing::ValuesIn(kiln::test::test_devices()),
                         kiln::test::device_param_name);

}  // namespace
}  // namespace kiln
