#include "kiln/engine/elementwise.h"

#include "kiln/engine/creation.h"
#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_elementwise.h"
#include "kiln/ops/elementwise_rules.h"

namespace kiln {

namespace {

OpAttrs scalar_attrs(double value, ScalarSide side) {
  OpAttrs a;
  a.scalar = value;
  a.scalar_side = side;
  return a;
}

// where's scalar forms become a 0-d tensor broadcast against the others, in the dtype the
// scalar would take next to the other value operand.
Tensor scalar_like(const char* op, const Tensor& other, double value) {
  KILN_CHECK(other.defined(), op, "the tensor operand is undefined");
  return full(Shape{}, value, {scalar_operand_dtype(other.dtype(), value), other.device()});
}

}  // namespace

// Each use ends in `;`, an empty declaration, so that formatters see one statement per op.
#define KILN_UNARY(name) \
  Tensor name(Tensor x) { return detail::submit1(OpKind::name, std::move(x)); }
KILN_UNARY(neg);
KILN_UNARY(abs);
KILN_UNARY(exp);
KILN_UNARY(log);
KILN_UNARY(log1p);
KILN_UNARY(expm1);
KILN_UNARY(sqrt);
KILN_UNARY(rsqrt);
KILN_UNARY(square);
KILN_UNARY(reciprocal);
KILN_UNARY(sin);
KILN_UNARY(cos);
KILN_UNARY(tan);
KILN_UNARY(tanh);
KILN_UNARY(sigmoid);
KILN_UNARY(erf);
KILN_UNARY(relu);
KILN_UNARY(gelu);
KILN_UNARY(silu);
KILN_UNARY(softplus);
KILN_UNARY(floor);
KILN_UNARY(ceil);
KILN_UNARY(round);
KILN_UNARY(sign);
KILN_UNARY(isnan);
KILN_UNARY(isinf);
KILN_UNARY(logical_not);
#undef KILN_UNARY

Tensor cast(Tensor x, DType dtype) {
  // Like torch's x.to(dtype): a cast to the tensor's own dtype is the tensor itself.
  if (x.defined() && x.dtype() == dtype) return x;
  OpAttrs a;
  a.dtype = dtype;
  return detail::submit1(OpKind::cast, std::move(x), std::move(a));
}

Tensor clone(const Tensor& x) {
  // A cast to x's own dtype, submitted as an op (cast() would hand back x itself): one copy
  // that fuses like any elementwise op and is never done in place, since x keeps its handle.
  OpAttrs a;
  a.dtype = x.dtype();
  return detail::submit1(OpKind::cast, x, std::move(a));
}

#define KILN_BINARY(name)                                                                               \
  Tensor name(Tensor a, Tensor b) { return detail::submit2(OpKind::name, std::move(a), std::move(b)); } \
  Tensor name(Tensor a, double b) {                                                                     \
    return detail::submit1(OpKind::name, std::move(a), scalar_attrs(b, ScalarSide::Rhs));               \
  }                                                                                                     \
  Tensor name(double a, Tensor b) {                                                                     \
    return detail::submit1(OpKind::name, std::move(b), scalar_attrs(a, ScalarSide::Lhs));               \
  }
KILN_BINARY(add);
KILN_BINARY(sub);
KILN_BINARY(mul);
KILN_BINARY(div);
KILN_BINARY(pow);
KILN_BINARY(remainder);
KILN_BINARY(maximum);
KILN_BINARY(minimum);
KILN_BINARY(atan2);
KILN_BINARY(eq);
KILN_BINARY(ne);
KILN_BINARY(lt);
KILN_BINARY(le);
KILN_BINARY(gt);
KILN_BINARY(ge);
KILN_BINARY(logical_and);
KILN_BINARY(logical_or);
KILN_BINARY(logical_xor);
#undef KILN_BINARY

Tensor where(Tensor cond, Tensor a, Tensor b) {
  return detail::submit3(OpKind::where, std::move(cond), std::move(a), std::move(b));
}
Tensor where(Tensor cond, Tensor a, double b) {
  Tensor sb = scalar_like("where", a, b);
  return where(std::move(cond), std::move(a), std::move(sb));
}
Tensor where(Tensor cond, double a, Tensor b) {
  Tensor sa = scalar_like("where", b, a);
  return where(std::move(cond), std::move(sa), std::move(b));
}

Tensor clamp(Tensor x, std::optional<double> min, std::optional<double> max) {
  const ClampAttrs a{.has_min = min.has_value(), .has_max = max.has_value(), .min = min.value_or(0.0),
                     .max = max.value_or(0.0)};
  return detail::submit1(OpKind::clamp, std::move(x), a.encode());
}

}  // namespace kiln
