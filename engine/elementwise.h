// Elementwise ops: unary math, binary arithmetic and comparisons with NumPy broadcasting and
// scalar forms, logical ops, where, clamp and cast.
//
// Result dtypes: arithmetic promotes bool < i64 < f32; a scalar keeps an i64 tensor i64 when
// it is a whole number and makes it f32 otherwise; div and the float math ops (exp, sqrt, ...)
// always give f32; comparisons, logical ops, isnan and isinf give bool.
#pragma once
#include <optional>

#include "kiln/engine/tensor.h"

namespace kiln {

#define KILN_UNARY(name) Tensor name(Tensor x);
KILN_UNARY(neg) KILN_UNARY(abs) KILN_UNARY(exp) KILN_UNARY(log) KILN_UNARY(log1p) KILN_UNARY(expm1)
KILN_UNARY(sqrt) KILN_UNARY(rsqrt) KILN_UNARY(square) KILN_UNARY(reciprocal) KILN_UNARY(sin) KILN_UNARY(cos)
KILN_UNARY(tan) KILN_UNARY(tanh) KILN_UNARY(sigmoid) KILN_UNARY(erf) KILN_UNARY(relu) KILN_UNARY(gelu)
KILN_UNARY(silu) KILN_UNARY(softplus) KILN_UNARY(floor) KILN_UNARY(ceil) KILN_UNARY(round) KILN_UNARY(sign)
KILN_UNARY(isnan) KILN_UNARY(isinf) KILN_UNARY(logical_not)
#undef KILN_UNARY

Tensor cast(Tensor x, DType dtype);
// A copy of x's values in a buffer of its own (torch.clone); no gradient is recorded through
// it unless x requires one.
Tensor clone(const Tensor& x);

#define KILN_BINARY(name)             \
  Tensor name(Tensor a, Tensor b);    \
  Tensor name(Tensor a, double b);    \
  Tensor name(double a, Tensor b);
KILN_BINARY(add) KILN_BINARY(sub) KILN_BINARY(mul) KILN_BINARY(div) KILN_BINARY(pow) KILN_BINARY(remainder)
KILN_BINARY(maximum) KILN_BINARY(minimum) KILN_BINARY(atan2) KILN_BINARY(eq) KILN_BINARY(ne) KILN_BINARY(lt)
KILN_BINARY(le) KILN_BINARY(gt) KILN_BINARY(ge) KILN_BINARY(logical_and) KILN_BINARY(logical_or)
KILN_BINARY(logical_xor)
#undef KILN_BINARY

inline Tensor operator+(Tensor a, Tensor b) { return add(std::move(a), std::move(b)); }
inline Tensor operator-(Tensor a, Tensor b) { return sub(std::move(a), std::move(b)); }
inline Tensor operator*(Tensor a, Tensor b) { return mul(std::move(a), std::move(b)); }
inline Tensor operator/(Tensor a, Tensor b) { return div(std::move(a), std::move(b)); }
inline Tensor operator+(Tensor a, double b) { return add(std::move(a), b); }
inline Tensor operator-(Tensor a, double b) { return sub(std::move(a), b); }
inline Tensor operator*(Tensor a, double b) { return mul(std::move(a), b); }
inline Tensor operator/(Tensor a, double b) { return div(std::move(a), b); }
inline Tensor operator+(double a, Tensor b) { return add(a, std::move(b)); }
inline Tensor operator-(double a, Tensor b) { return sub(a, std::move(b)); }
inline Tensor operator*(double a, Tensor b) { return mul(a, std::move(b)); }
inline Tensor operator/(double a, Tensor b) { return div(a, std::move(b)); }
inline Tensor operator-(Tensor x) { return neg(std::move(x)); }

// cond ? a : b, broadcasting all three; cond is bool.
Tensor where(Tensor cond, Tensor a, Tensor b);
Tensor where(Tensor cond, Tensor a, double b);
Tensor where(Tensor cond, double a, Tensor b);
Tensor clamp(Tensor x, std::optional<double> min, std::optional<double> max);

}  // namespace kiln
