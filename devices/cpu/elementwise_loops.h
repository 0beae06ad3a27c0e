// The loops that apply one elementwise formula to a run of elements, for the math functions of
// devices/cpu/elementwise_math_*.cpp.
//
// f32 formulas run on whole native vectors (simd::VF) only: the tail of a run is copied into a
// zero-padded vector and goes through the same instructions as the body, so element i gets the
// same bits wherever it falls (SLEEF's vector functions and FMA contraction included). i64 and
// bool formulas are exact integer arithmetic: plain loops, which the compiler vectorizes.
// An operand with stride 0 is one value repeated; each stride pattern is its own instantiation.
// The output may alias an operand: every loop reads element i before writing it.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kiln/devices/cpu/elementwise_math.h"
#include "kiln/devices/cpu/simd.h"

namespace kiln::cpu::loops {

using simd::kLanes;
using simd::VF;
using simd::VM;

// float for formulas that give values, bool for those that give lane masks.
template <class R>
using OutOf = std::conditional_t<std::is_same_v<R, VM>, bool, float>;

// The empty asm makes v a finished value: without it the compiler may contract a multiply
// with an add into one FMA, which rounds once where two separate nodes round twice.
inline VF finished(VF v) {
#if defined(__AVX512F__)
  asm("" : "+v"(v));
#else
  asm("" : "+x"(v));
#endif
  return v;
}

// v, then the post op (elementwise_math.h), each step a finished value.
template <bool kDivides>
inline VF apply_post(const Post& post, VF v) {
  v = finished(v);
  if constexpr (kDivides) return finished(v / simd::splat(post.divisor));
  return finished(finished(v * simd::splat(post.scale)) + simd::splat(post.offset));
}

template <class Op>
void map1_f32(const float* x, void* yv, std::int64_t n, const Op& op) {
  using Out = OutOf<decltype(op(VF{}))>;
  Out* y = static_cast<Out*>(yv);
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) simd::store(y + i, op(simd::load(x + i)));
  if (i == n) return;
  const auto m = static_cast<std::size_t>(n - i);
  alignas(64) float xb[kLanes] = {};
  alignas(64) Out yb[kLanes];
  std::memcpy(xb, x + i, m * sizeof(float));
  simd::store(yb, op(simd::load(xb)));
  std::memcpy(y + i, yb, m * sizeof(Out));
}

template <bool kScalarA, bool kScalarB, class Op>
void map2_f32_strided(const float* a, const float* b, void* yv, std::int64_t n, const Op& op) {
  using Out = OutOf<decltype(op(VF{}, VF{}))>;
  Out* y = static_cast<Out*>(yv);
  const VF a0 = kScalarA ? simd::splat(a[0]) : VF{};
  const VF b0 = kScalarB ? simd::splat(b[0]) : VF{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const VF av = kScalarA ? a0 : simd::load(a + i);
    const VF bv = kScalarB ? b0 : simd::load(b + i);
    simd::store(y + i, op(av, bv));
  }
  if (i == n) return;
  const auto m = static_cast<std::size_t>(n - i);
  alignas(64) float ab[kLanes] = {}, bb[kLanes] = {};
  alignas(64) Out yb[kLanes];
  if (!kScalarA) std::memcpy(ab, a + i, m * sizeof(float));
  if (!kScalarB) std::memcpy(bb, b + i, m * sizeof(float));
  simd::store(yb, op(kScalarA ? a0 : simd::load(ab), kScalarB ? b0 : simd::load(bb)));
  std::memcpy(y + i, yb, m * sizeof(Out));
}

template <class Op>
void map2_f32(const float* a, std::int64_t sa, const float* b, std::int64_t sb, void* y, std::int64_t n, const Op& op) {
  if (sa && sb)
    map2_f32_strided<false, false>(a, b, y, n, op);
  else if (sb)
    map2_f32_strided<true, false>(a, b, y, n, op);
  else if (sa)
    map2_f32_strided<false, true>(a, b, y, n, op);
  else
    map2_f32_strided<true, true>(a, b, y, n, op);
}

template <class T, class U, class F>
void map1_plain(const T* x, U* y, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// A stride-0 operand is read once, before the loop: it stays right if the output aliases it,
// and the loop body has no reload that would keep the compiler from vectorizing.
template <int kSA, int kSB, class T, class U, class F>
void map2_plain_strided(const T* a, const T* b, U* y, std::int64_t n, F f) {
  if constexpr (kSA == 0 && kSB == 0) {
    const U v = f(a[0], b[0]);
    for (std::int64_t i = 0; i < n; ++i) y[i] = v;
  } else if constexpr (kSA == 0) {
    const T a0 = a[0];
    for (std::int64_t i = 0; i < n; ++i) y[i] = f(a0, b[i]);
  } else if constexpr (kSB == 0) {
    const T b0 = b[0];
    for (std::int64_t i = 0; i < n; ++i) y[i] = f(a[i], b0);
  } else {
    for (std::int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  }
}

template <class T, class U, class F>
void map2_plain(const T* a, std::int64_t sa, const T* b, std::int64_t sb, U* y, std::int64_t n, F f) {
  if (sa && sb)
    map2_plain_strided<1, 1>(a, b, y, n, f);
  else if (sb)
    map2_plain_strided<0, 1>(a, b, y, n, f);
  else if (sa)
    map2_plain_strided<1, 0>(a, b, y, n, f);
  else
    map2_plain_strided<0, 0>(a, b, y, n, f);
}

}  // namespace kiln::cpu::loops
