// The math of the unary elementwise ops (and clamp, whose bounds are attributes). f32 formulas
// follow PyTorch's vectorized CPU kernels (ATen's Vectorized<float>), so that results agree to
// about 1 ulp (SLEEF's u10 functions, and kiln's own exp and erf: devices/cpu/fast_exp.h,
// fast_erf.h); integer formulas wrap on overflow like PyTorch's.
#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/devices/cpu/elementwise_loops.h"
#include "kiln/devices/cpu/elementwise_math.h"
#include "kiln/devices/cpu/fast_erf.h"
#include "kiln/devices/cpu/fast_exp.h"
#include "kiln/ops/attrs_elementwise.h"

namespace kiln::cpu {

namespace {

using simd::VF;
using simd::VM;

// ---- f32 ----------------------------------------------------------------------------------

// clang-format off
#define KILN_F32(name, expr)                            \
  struct name {                                         \
    auto operator()(VF x) const { return expr; }        \
  };
KILN_F32(Neg, -x)
KILN_F32(Abs, simd::abs(x))
KILN_F32(Exp, simd::exp(x))
KILN_F32(Log, simd::log(x))
KILN_F32(Log1p, simd::log1p(x))
KILN_F32(Expm1, simd::expm1(x))
KILN_F32(Sqrt, simd::sqrt(x))
KILN_F32(Rsqrt, 1.0f / simd::sqrt(x))
KILN_F32(Square, x * x)
KILN_F32(Reciprocal, 1.0f / x)
KILN_F32(Sin, simd::sin(x))
KILN_F32(Cos, simd::cos(x))
KILN_F32(Tan, simd::tan(x))
KILN_F32(Tanh, simd::tanh(x))
KILN_F32(Sigmoid, 1.0f / (1.0f + simd::exp(-x)))
KILN_F32(Erf, simd::erf(x))
// max(x, 0) that keeps NaN and -0.0, like torch.relu.
KILN_F32(Relu, simd::select(x < 0.0f, simd::splat(0.0f), x))
// The exact (erf) form, torch's default approximate='none'.
KILN_F32(Gelu, x * 0.5f * (1.0f + simd::erf(x * static_cast<float>(M_SQRT1_2))))
KILN_F32(Silu, x / (1.0f + simd::exp(-x)))
// beta = 1, threshold = 20, like torch.nn.functional.softplus's defaults.
KILN_F32(Softplus, simd::select(x > 20.0f, x, simd::log1p(simd::exp(x))))
KILN_F32(Floor, simd::floor(x))
KILN_F32(Ceil, simd::ceil(x))
KILN_F32(Round, simd::rint(x))  // half to even, like torch.round
// (0 < x) - (x < 0): 0 for NaN and for both zeros, like torch.sign.
KILN_F32(Sign, simd::from_mask(x > 0.0f) - simd::from_mask(x < 0.0f))
KILN_F32(IsNan, simd::isnan(x))
KILN_F32(IsInf, simd::abs(x) == std::numeric_limits<float>::infinity())
#undef KILN_F32
// clang-format on

template <class Op>
void f32_fn(const void* x, void* y, std::int64_t n, const OpAttrs&) {
  loops::map1_f32(static_cast<const float*>(x), y, n, Op{});
}

template <class Op>
void f32_post_fn(const void* x, void* y, std::int64_t n, const OpAttrs&, Post pre, Post post) {
  const auto* xf = static_cast<const float*>(x);
  auto run = [&]<bool kPreDivides, bool kPostDivides>() {
    loops::map1_f32(xf, y, n, [pre, post](VF v) {
      return loops::apply_post<kPostDivides>(post, Op{}(loops::apply_post<kPreDivides>(pre, v)));
    });
  };
  if (pre.divides) post.divides ? run.template operator()<true, true>() : run.template operator()<true, false>();
  else post.divides ? run.template operator()<false, true>() : run.template operator()<false, false>();
}

struct Clamp {
  VF lo, hi;
  VF operator()(VF x) const { return simd::minimum(simd::maximum(x, lo), hi); }
};

// An absent bound is an infinite one; torch's rule min > max gives max falls out of the order.
void clamp_f32(const void* x, void* y, std::int64_t n, const OpAttrs& a) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const ClampAttrs c = ClampAttrs::decode(OpKind::clamp, a);
  const float lo = c.has_min ? static_cast<float>(c.min) : -inf;
  const float hi = c.has_max ? static_cast<float>(c.max) : inf;
  loops::map1_f32(static_cast<const float*>(x), y, n, Clamp{simd::splat(lo), simd::splat(hi)});
}

// ---- i64 and bool -------------------------------------------------------------------------

using i64 = std::int64_t;
using u64 = std::uint64_t;

// Unsigned arithmetic: two's-complement wrap-around without undefined behaviour.
inline i64 wrap_neg(i64 x) { return static_cast<i64>(u64{0} - static_cast<u64>(x)); }
inline i64 wrap_mul(i64 a, i64 b) { return static_cast<i64>(static_cast<u64>(a) * static_cast<u64>(b)); }

template <class T, class U, class F>
UnaryFn plain_fn() {
  return [](const void* x, void* y, std::int64_t n, const OpAttrs&) {
    loops::map1_plain(static_cast<const T*>(x), static_cast<U*>(y), n, F{});
  };
}

// clang-format off
#define KILN_PLAIN(name, T, expr)                      \
  struct name {                                        \
    auto operator()(T x) const { return expr; }        \
  };
KILN_PLAIN(NegI, i64, wrap_neg(x))
KILN_PLAIN(AbsI, i64, x < 0 ? wrap_neg(x) : x)
KILN_PLAIN(SquareI, i64, wrap_mul(x, x))
KILN_PLAIN(ReluI, i64, x < 0 ? i64{0} : x)
KILN_PLAIN(SignI, i64, static_cast<i64>((x > 0) - (x < 0)))
KILN_PLAIN(FalseI, i64, false)
KILN_PLAIN(FalseB, bool, false)
KILN_PLAIN(NotB, bool, !x)
#undef KILN_PLAIN
// clang-format on

void copy_fn(const void* x, void* y, std::int64_t n, std::size_t size) {
  if (x != y && n > 0) std::memmove(y, x, static_cast<std::size_t>(n) * size);
}

void clamp_i64(const void* xv, void* yv, std::int64_t n, const OpAttrs& a) {
  // The shape rule computes in f32 unless every given bound is a whole number.
  const ClampAttrs c = ClampAttrs::decode(OpKind::clamp, a);
  const i64 lo = c.has_min ? static_cast<i64>(c.min) : std::numeric_limits<i64>::min();
  const i64 hi = c.has_max ? static_cast<i64>(c.max) : std::numeric_limits<i64>::max();
  const i64* x = static_cast<const i64*>(xv);
  i64* y = static_cast<i64*>(yv);
  for (std::int64_t i = 0; i < n; ++i) {
    const i64 v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

// The f32 ops whose result is a value (not a lane mask): in unary_f32_table and in unary_f32_post_table.
#define KILN_F32_VALUE_OPS(X) \
  X(neg, Neg) \
  X(abs, Abs) \
  X(exp, Exp) \
  X(log, Log) \
  X(log1p, Log1p) \
  X(expm1, Expm1) \
  X(sqrt, Sqrt) \
  X(rsqrt, Rsqrt) \
  X(square, Square) \
  X(reciprocal, Reciprocal) \
  X(sin, Sin) \
  X(cos, Cos) \
  X(tan, Tan) \
  X(tanh, Tanh) \
  X(sigmoid, Sigmoid) \
  X(erf, Erf) \
  X(relu, Relu) \
  X(gelu, Gelu) \
  X(silu, Silu) \
  X(softplus, Softplus) \
  X(floor, Floor) \
  X(ceil, Ceil) \
  X(round, Round) \
  X(sign, Sign)

UnaryFn unary_f32_table(OpKind kind) {
#define KILN_CASE(name, Op) \
  case OpKind::name: return f32_fn<Op>;
  switch (kind) {
    KILN_F32_VALUE_OPS(KILN_CASE)
    case OpKind::isnan: return f32_fn<IsNan>;
    case OpKind::isinf: return f32_fn<IsInf>;
    case OpKind::clamp: return clamp_f32;
    case OpKind::cast: return [](const void* x, void* y, std::int64_t n, const OpAttrs&) { copy_fn(x, y, n, 4); };
    default: return nullptr;
  }
#undef KILN_CASE
}

UnaryFn unary_i64_table(OpKind kind) {
  constexpr UnaryFn copy = [](const void* x, void* y, std::int64_t n, const OpAttrs&) { copy_fn(x, y, n, 8); };
  switch (kind) {
    case OpKind::neg: return plain_fn<i64, i64, NegI>();
    case OpKind::abs: return plain_fn<i64, i64, AbsI>();
    case OpKind::square: return plain_fn<i64, i64, SquareI>();
    case OpKind::relu: return plain_fn<i64, i64, ReluI>();
    case OpKind::sign: return plain_fn<i64, i64, SignI>();
    case OpKind::isnan:
    case OpKind::isinf: return plain_fn<i64, bool, FalseI>();
    case OpKind::clamp: return clamp_i64;
    case OpKind::floor:  // integers are already whole: torch returns them unchanged
    case OpKind::ceil:
    case OpKind::round:
    case OpKind::cast: return copy;
    default: return nullptr;
  }
}

UnaryFn unary_bool_table(OpKind kind) {
  constexpr UnaryFn copy = [](const void* x, void* y, std::int64_t n, const OpAttrs&) { copy_fn(x, y, n, 1); };
  switch (kind) {
    case OpKind::logical_not: return plain_fn<bool, bool, NotB>();
    case OpKind::isnan:
    case OpKind::isinf: return plain_fn<bool, bool, FalseB>();
    case OpKind::sign:  // sign of a bool is the bool itself
    case OpKind::cast: return copy;
    default: return nullptr;
  }
}

UnaryPostFn unary_f32_post_table(OpKind kind) {
#define KILN_CASE(name, Op) \
  case OpKind::name: return f32_post_fn<Op>;
  switch (kind) {
    KILN_F32_VALUE_OPS(KILN_CASE)
    default: return nullptr;
  }
#undef KILN_CASE
}
#undef KILN_F32_VALUE_OPS

}  // namespace

UnaryPostFn unary_post_fn(OpKind kind) { return unary_f32_post_table(kind); }

UnaryFn unary_fn(OpKind kind, DType compute) {
  switch (compute) {
    case DType::f32: return unary_f32_table(kind);
    case DType::i64: return unary_i64_table(kind);
    case DType::bool_: return unary_bool_table(kind);
    default: return nullptr;
  }
}

}  // namespace kiln::cpu
