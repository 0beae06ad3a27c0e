#include "support/elementwise_cases.h"

#include <optional>

namespace kiln::test {

namespace {

double scalar_of(const Json& attrs) { return attrs.at("scalar").get<double>(); }
bool lhs_scalar(const Json& attrs) { return attrs.at("side").get<std::string>() == "lhs"; }

std::optional<double> optional_attr(const Json& attrs, const char* key) {
  if (!attrs.contains(key)) return std::nullopt;
  return attrs.at(key).get<double>();
}

}  // namespace

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

bool is_elementwise_case(const RefCase& c) {
  return unary_ops().count(c.op) || binary_ops().count(c.op) || c.op == "cast" || c.op == "where" ||
         c.op == "clamp";
}

Tensor run_elementwise_case(const RefCase& c, Device device) {
  std::vector<Tensor> in;
  for (const Json& j : c.inputs) in.push_back(make_tensor(j, device));
  const Json& attrs = c.attrs;
  if (auto it = unary_ops().find(c.op); it != unary_ops().end()) return it->second(in[0]);
  if (c.op == "cast") return cast(in[0], parse_dtype(attrs.at("dtype").get<std::string>()));
  if (c.op == "clamp") return clamp(in[0], optional_attr(attrs, "min"), optional_attr(attrs, "max"));
  if (c.op == "where") {
    if (!attrs.contains("scalar")) return where(in[0], in[1], in[2]);
    return lhs_scalar(attrs) ? where(in[0], scalar_of(attrs), in[1]) : where(in[0], in[1], scalar_of(attrs));
  }
  const BinaryOp& op = binary_ops().at(c.op);
  if (!attrs.contains("scalar")) return op.tt(in[0], in[1]);
  return lhs_scalar(attrs) ? op.st(scalar_of(attrs), in[0]) : op.ts(in[0], scalar_of(attrs));
}

}  // namespace kiln::test
