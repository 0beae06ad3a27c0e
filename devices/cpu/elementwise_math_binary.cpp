// The math of the binary elementwise ops and of where. f32 formulas follow PyTorch's vectorized
// CPU kernels; i64 formulas wrap on overflow and raise kiln::Error where PyTorch raises
// (remainder by zero). Bool arithmetic is PyTorch's: add and maximum are `or`, mul and minimum
// are `and`.
#include <cstring>
#include <limits>
#include <type_traits>

#include "kiln/devices/cpu/elementwise_loops.h"
#include "kiln/devices/cpu/elementwise_math.h"
#include "kiln/base/error.h"

namespace kiln::cpu {

namespace {

using simd::VF;
using simd::VM;
using i64 = std::int64_t;
using u64 = std::uint64_t;

// ---- f32 ----------------------------------------------------------------------------------

// clang-format off
#define KILN_F32(name, expr)                                \
  struct name {                                             \
    auto operator()(VF a, VF b) const { return expr; }      \
  };
KILN_F32(Add, a + b)
KILN_F32(Sub, a - b)
KILN_F32(Mul, a * b)
KILN_F32(Div, a / b)
KILN_F32(Pow, simd::pow(a, b))
KILN_F32(Maximum, simd::maximum(a, b))
KILN_F32(Minimum, simd::minimum(a, b))
KILN_F32(Atan2, simd::atan2(a, b))
KILN_F32(Eq, a == b)
KILN_F32(Ne, a != b)
KILN_F32(Lt, a < b)
KILN_F32(Le, a <= b)
KILN_F32(Gt, a > b)
KILN_F32(Ge, a >= b)
#undef KILN_F32
// clang-format on

// Python's modulo: the result takes the divisor's sign (torch.remainder); x % 0 is NaN.
struct Remainder {
  VF operator()(VF a, VF b) const {
    const VF mod = simd::fmod(a, b);
    const VM adjust = (mod != 0.0f) & ((b < 0.0f) != (mod < 0.0f));
    return simd::select(adjust, mod + b, mod);
  }
};

template <class Op>
void f32_fn(const void* a, std::int64_t sa, const void* b, std::int64_t sb, void* y, std::int64_t n) {
  loops::map2_f32(static_cast<const float*>(a), sa, static_cast<const float*>(b), sb, y, n, Op{});
}

template <class Op>
void f32_post_fn(const void* a, std::int64_t sa, const void* b, std::int64_t sb, void* y, std::int64_t n, Post post) {
  const auto *af = static_cast<const float*>(a), *bf = static_cast<const float*>(b);
  if (post.divides)
    loops::map2_f32(af, sa, bf, sb, y, n, [post](VF x, VF z) { return loops::apply_post<true>(post, Op{}(x, z)); });
  else
    loops::map2_f32(af, sa, bf, sb, y, n, [post](VF x, VF z) { return loops::apply_post<false>(post, Op{}(x, z)); });
}

// A vector division costs about three multiplications here (Zen 4); x / 2, as in GELU's
// formula, needs none.
void div_f32(const void* a, std::int64_t sa, const void* b, std::int64_t sb, void* y, std::int64_t n) {
  if (sb == 0 && n > 0 && exact_reciprocal(*static_cast<const float*>(b))) {
    const float r = 1.0f / *static_cast<const float*>(b);
    f32_fn<Mul>(a, sa, &r, 0, y, n);
  } else {
    f32_fn<Div>(a, sa, b, sb, y, n);
  }
}

// ---- i64 and bool -------------------------------------------------------------------------

// Unsigned arithmetic: two's-complement wrap-around (as PyTorch gives) without undefined behaviour.
inline u64 u(i64 x) { return static_cast<u64>(x); }

// clang-format off
struct AddI { i64 operator()(i64 a, i64 b) const { return static_cast<i64>(u(a) + u(b)); } };
struct SubI { i64 operator()(i64 a, i64 b) const { return static_cast<i64>(u(a) - u(b)); } };
struct MulI { i64 operator()(i64 a, i64 b) const { return static_cast<i64>(u(a) * u(b)); } };
struct MaxI { i64 operator()(i64 a, i64 b) const { return a > b ? a : b; } };
struct MinI { i64 operator()(i64 a, i64 b) const { return a < b ? a : b; } };
// clang-format on

// torch's integer pow: a negative exponent gives 1 / a^|b| truncated (0 unless |a| == 1).
struct PowI {
  i64 operator()(i64 a, i64 b) const {
    if (b < 0) {
      if (a == 1) return 1;
      if (a == -1) return (b & 1) ? -1 : 1;
      return 0;
    }
    u64 result = 1, base = static_cast<u64>(a);
    for (u64 e = static_cast<u64>(b); e; e >>= 1) {
      if (e & 1) result *= base;
      base *= base;
    }
    return static_cast<i64>(result);
  }
};

struct RemainderI {
  i64 operator()(i64 a, i64 b) const {
    if (b == 0) throw Error("remainder", "integer division by zero (an i64 divisor is 0)");
    if (b == -1) return 0;  // i64 min % -1 overflows in C++; the remainder is 0 anyway
    i64 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
};

// clang-format off
template <class T> struct EqT { bool operator()(T a, T b) const { return a == b; } };
template <class T> struct NeT { bool operator()(T a, T b) const { return a != b; } };
template <class T> struct LtT { bool operator()(T a, T b) const { return a < b; } };
template <class T> struct LeT { bool operator()(T a, T b) const { return a <= b; } };
template <class T> struct GtT { bool operator()(T a, T b) const { return a > b; } };
template <class T> struct GeT { bool operator()(T a, T b) const { return a >= b; } };
struct OrB { bool operator()(bool a, bool b) const { return a || b; } };
struct AndB { bool operator()(bool a, bool b) const { return a && b; } };
struct XorB { bool operator()(bool a, bool b) const { return a != b; } };
// clang-format on

template <class T, class U, class Op>
void plain_fn(const void* a, std::int64_t sa, const void* b, std::int64_t sb, void* y, std::int64_t n) {
  loops::map2_plain(static_cast<const T*>(a), sa, static_cast<const T*>(b), sb, static_cast<U*>(y), n, Op{});
}

template <class T>
BinaryFn compare_table(OpKind kind) {
  switch (kind) {
    case OpKind::eq: return plain_fn<T, bool, EqT<T>>;
    case OpKind::ne: return plain_fn<T, bool, NeT<T>>;
    case OpKind::lt: return plain_fn<T, bool, LtT<T>>;
    case OpKind::le: return plain_fn<T, bool, LeT<T>>;
    case OpKind::gt: return plain_fn<T, bool, GtT<T>>;
    case OpKind::ge: return plain_fn<T, bool, GeT<T>>;
    default: return nullptr;
  }
}

// The f32 ops whose result is a value (not a lane mask), div apart (binary_f32_table divides by a
// scalar power of two as a multiply, with the same bits): in binary_f32_table and binary_f32_post_table.
#define KILN_F32_VALUE_OPS(X) \
  X(add, Add) X(sub, Sub) X(mul, Mul) X(pow, Pow) X(remainder, Remainder) X(maximum, Maximum) \
  X(minimum, Minimum) X(atan2, Atan2)

BinaryPostFn binary_f32_post_table(OpKind kind) {
#define KILN_CASE(name, Op) \
  case OpKind::name: return f32_post_fn<Op>;
  switch (kind) {
    KILN_F32_VALUE_OPS(KILN_CASE)
    case OpKind::div: return f32_post_fn<Div>;
    default: return nullptr;
  }
#undef KILN_CASE
}

BinaryFn binary_f32_table(OpKind kind) {
#define KILN_CASE(name, Op) \
  case OpKind::name: return f32_fn<Op>;
  switch (kind) {
    KILN_F32_VALUE_OPS(KILN_CASE)
    case OpKind::div: return div_f32;
    case OpKind::eq: return f32_fn<Eq>;
    case OpKind::ne: return f32_fn<Ne>;
    case OpKind::lt: return f32_fn<Lt>;
    case OpKind::le: return f32_fn<Le>;
    case OpKind::gt: return f32_fn<Gt>;
    case OpKind::ge: return f32_fn<Ge>;
    default: return nullptr;
  }
#undef KILN_CASE
}
#undef KILN_F32_VALUE_OPS

BinaryFn binary_i64_table(OpKind kind) {
  switch (kind) {
    case OpKind::add: return plain_fn<i64, i64, AddI>;
    case OpKind::sub: return plain_fn<i64, i64, SubI>;
    case OpKind::mul: return plain_fn<i64, i64, MulI>;
    case OpKind::pow: return plain_fn<i64, i64, PowI>;
    case OpKind::remainder: return plain_fn<i64, i64, RemainderI>;
    case OpKind::maximum: return plain_fn<i64, i64, MaxI>;
    case OpKind::minimum: return plain_fn<i64, i64, MinI>;
    default: return compare_table<i64>(kind);
  }
}

BinaryFn binary_bool_table(OpKind kind) {
  switch (kind) {
    case OpKind::add:
    case OpKind::maximum:
    case OpKind::logical_or: return plain_fn<bool, bool, OrB>;
    case OpKind::mul:
    case OpKind::minimum:
    case OpKind::logical_and: return plain_fn<bool, bool, AndB>;
    case OpKind::logical_xor: return plain_fn<bool, bool, XorB>;
    default: return compare_table<bool>(kind);
  }
}

// ---- where --------------------------------------------------------------------------------

// A selection copies bits, so it is exact for every dtype. Both operands are read before the
// choice, which is a mask (f32: vector lanes, else the bits of one element): no branch. A
// branch on the condition mispredicted on every other element of a ReLU gradient's mask (13% of
// resnet_block's step on the CPU). Stride-0 operands are read once, before the loop (see
// map2_plain_strided).
template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 1, std::uint8_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, u64>>;

template <int kSC, int kSA, int kSB, class T>
void where_strided(const bool* c, const T* a, const T* b, T* y, std::int64_t n) {
  using U = BitsOf<T>;
  static_assert(sizeof(U) == sizeof(T));
  const bool c0 = kSC ? false : c[0];
  const T a0 = kSA ? T{} : a[0];
  const T b0 = kSB ? T{} : b[0];
  std::int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    const VM cm = simd::splat_mask(c0);
    const VF av = simd::splat(a0), bv = simd::splat(b0);
    for (; i + simd::kLanes <= n; i += simd::kLanes)
      simd::store(y + i, simd::select(kSC ? simd::load_mask(c + i) : cm, kSA ? simd::load(a + i) : av,
                                      kSB ? simd::load(b + i) : bv));
  }
  for (; i < n; ++i) {
    U ai, bi;
    std::memcpy(&ai, kSA ? a + i : &a0, sizeof(U));
    std::memcpy(&bi, kSB ? b + i : &b0, sizeof(U));
    const U m = U(0) - U(kSC ? c[i] : c0);
    const U r = (ai & m) | (bi & U(~m));
    std::memcpy(y + i, &r, sizeof(U));
  }
}

template <class T>
void where_t(const void* cv, std::int64_t sc, const void* av, std::int64_t sa, const void* bv, std::int64_t sb,
             void* yv, std::int64_t n) {
  const bool* c = static_cast<const bool*>(cv);
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  T* y = static_cast<T*>(yv);
  switch ((sc ? 4 : 0) | (sa ? 2 : 0) | (sb ? 1 : 0)) {
    case 0: return where_strided<0, 0, 0>(c, a, b, y, n);
    case 1: return where_strided<0, 0, 1>(c, a, b, y, n);
    case 2: return where_strided<0, 1, 0>(c, a, b, y, n);
    case 3: return where_strided<0, 1, 1>(c, a, b, y, n);
    case 4: return where_strided<1, 0, 0>(c, a, b, y, n);
    case 5: return where_strided<1, 0, 1>(c, a, b, y, n);
    case 6: return where_strided<1, 1, 0>(c, a, b, y, n);
    default: return where_strided<1, 1, 1>(c, a, b, y, n);
  }
}

}  // namespace

BinaryPostFn binary_post_fn(OpKind kind) { return binary_f32_post_table(kind); }

PostOp post_op_of(OpKind kind, int scalar_operand) {
  switch (kind) {
    case OpKind::add: return PostOp::add;
    case OpKind::mul: return PostOp::mul;
    case OpKind::sub: return scalar_operand == 1 ? PostOp::sub : PostOp::rsub;
    case OpKind::div: return scalar_operand == 1 ? PostOp::div : PostOp::none;
    default: return PostOp::none;
  }
}

Post make_post(PostOp op, float s) {
  switch (op) {
    case PostOp::add: return {false, 1.0f, s};
    case PostOp::sub: return {false, 1.0f, -s};
    case PostOp::rsub: return {false, -1.0f, s};
    case PostOp::mul: return {false, s, -0.0f};
    case PostOp::div: return {true, 1.0f, -0.0f, s};
    case PostOp::none: break;
  }
  return {};
}

bool exact_reciprocal(float b) {
  std::uint32_t bits;
  std::memcpy(&bits, &b, sizeof bits);
  const std::uint32_t exponent = (bits >> 23) & 0xff;
  return (bits & 0x7fffff) == 0 && exponent != 0 && exponent != 0xff;
}

BinaryFn binary_fn(OpKind kind, DType compute) {
  switch (compute) {
    case DType::f32: return binary_f32_table(kind);
    case DType::i64: return binary_i64_table(kind);
    case DType::bool_: return binary_bool_table(kind);
    default: return nullptr;
  }
}

WhereFn where_fn(DType compute) {
  switch (compute) {
    case DType::f32: return where_t<float>;
    case DType::i64: return where_t<i64>;
    case DType::bool_: return where_t<bool>;
    default: return nullptr;
  }
}

}  // namespace kiln::cpu
