// Elementwise ops against PyTorch's values (tests/data/gen_elementwise.py): every op, every
// dtype it supports, broadcasting, scalar forms on both sides, 0-d and empty tensors, NaN/inf.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "support/reference.h"

namespace kiln {
namespace {

using test::Json;
using test::RefCase;
using test::Tolerance;

constexpr const char* kFile = "elementwise.json";

using UnaryOp = Tensor (*)(Tensor);
struct BinaryOp {
  Tensor (*tt)(Tensor, Tensor);
  Tensor (*ts)(Tensor, double);
  Tensor (*st)(double, Tensor);
};

const std::map<std::string, UnaryOp>& unary_ops() {
  static const std::map<std::string, UnaryOp> m = {
// clang-format off
#define U(name) {#name, static_cast<UnaryOp>(&kiln::name)},
      U(neg) U(abs) U(exp) U(log) U(log1p) U(expm1) U(sqrt) U(rsqrt) U(square) U(reciprocal) U(sin) U(cos) U(tan)
      U(tanh) U(sigmoid) U(erf) U(relu) U(gelu) U(silu) U(softplus) U(floor) U(ceil) U(round) U(sign) U(isnan)
      U(isinf) U(logical_not)
#undef U
      // clang-format on
  };
  return m;
}

const std::map<std::string, BinaryOp>& binary_ops() {
  static const std::map<std::string, BinaryOp> m = {
// clang-format off
#define B(name)                                                                                        \
  {#name, BinaryOp{static_cast<Tensor (*)(Tensor, Tensor)>(&kiln::name),                               \
                   static_cast<Tensor (*)(Tensor, double)>(&kiln::name),                               \
                   static_cast<Tensor (*)(double, Tensor)>(&kiln::name)}},
      B(add) B(sub) B(mul) B(div) B(pow) B(remainder) B(maximum) B(minimum) B(atan2) B(eq) B(ne) B(lt) B(le) B(gt)
      B(ge) B(logical_and) B(logical_or) B(logical_xor)
#undef B
      // clang-format on
  };
  return m;
}

// One tolerance for every op: rtol 1e-5 (about 80 ulp of f32), atol 1e-6. Integer and bool
// results must match exactly. Exact IEEE arithmetic, comparisons, rounding and casts match
// PyTorch bit for bit; so do log log1p expm1 sin cos tan tanh sqrt, which PyTorch also computes
// with SLEEF u10 (or glibc, within the same ulp). exp and erf are kiln's own (at most 0.91 and
// 1.15 ulp, test_fast_math.cpp), and gelu silu sigmoid softplus pow atan2 differ from PyTorch by
// a few ulp (SLEEF u10 against glibc, and PyTorch's own operation order in its scalar tails);
// atol covers outputs near zero, e.g. gelu of large negative inputs.
Tolerance tolerance_for(const std::string& op) { return {1e-5, 1e-6}; }

double scalar_attr(const Json& attrs) { return attrs.at("scalar").get<double>(); }
bool lhs_scalar(const Json& attrs) { return attrs.at("side").get<std::string>() == "lhs"; }

std::optional<double> optional_attr(const Json& attrs, const char* key) {
  if (!attrs.contains(key)) return std::nullopt;
  return attrs.at(key).get<double>();
}

Tensor run_case(const RefCase& c, Device device) {
  std::vector<Tensor> in;
  for (const Json& j : c.inputs) in.push_back(test::make_tensor(j, device));
  const Json& attrs = c.attrs;
  if (auto it = unary_ops().find(c.op); it != unary_ops().end()) return it->second(in[0]);
  if (c.op == "cast") return cast(in[0], test::parse_dtype(attrs.at("dtype").get<std::string>()));
  if (c.op == "clamp") return clamp(in[0], optional_attr(attrs, "min"), optional_attr(attrs, "max"));
  if (c.op == "where") {
    if (!attrs.contains("scalar")) return where(in[0], in[1], in[2]);
    return lhs_scalar(attrs) ? where(in[0], scalar_attr(attrs), in[1]) : where(in[0], in[1], scalar_attr(attrs));
  }
  const BinaryOp& op = binary_ops().at(c.op);
  if (!attrs.contains("scalar")) return op.tt(in[0], in[1]);
  return lhs_scalar(attrs) ? op.st(scalar_attr(attrs), in[0]) : op.ts(in[0], scalar_attr(attrs));
}

std::vector<std::string> all_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : unary_ops()) ops.push_back(name);
  for (const auto& [name, fn] : binary_ops()) ops.push_back(name);
  for (const char* name : {"cast", "where", "clamp"}) ops.push_back(name);
  return ops;
}

class ElementwiseReference : public ::testing::TestWithParam<Device> {};

TEST_P(ElementwiseReference, EveryOpMatchesPyTorch) {
  for (const std::string& op : all_ops()) {
    const std::vector<RefCase> cases = test::cases_for(kFile, op);
    EXPECT_FALSE(cases.empty()) << "no reference cases for " << op;
    for (const RefCase& c : cases) {
      SCOPED_TRACE(c.name);
      Tensor y = run_case(c, GetParam());
      EXPECT_TRUE(test::matches(y, c.outputs[0], tolerance_for(op)));
    }
  }
}

// Every supported dtype of every op is exercised: the data holds a case per (op, input dtype).
TEST_P(ElementwiseReference, CoversEveryDtype) {
  std::map<std::string, std::set<std::string>> seen;
  for (const RefCase& c : test::load_cases(kFile))
    for (const Json& t : c.inputs) seen[c.op].insert(t.at("dtype").get<std::string>());
  for (const std::string& op : all_ops()) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(seen[op].count("f32"));
    EXPECT_TRUE(seen[op].count("i64"));
    const bool bool_rejected =
        op == "neg" || op == "abs" || op == "relu" || op == "floor" || op == "ceil" || op == "round" || op == "sub";
    EXPECT_EQ(seen[op].count("bool") == 1, !bool_rejected);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ElementwiseReference, ::testing::ValuesIn(test::test_devices()),
                         test::device_param_name);

}  // namespace
}  // namespace kiln
