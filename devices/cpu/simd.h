// One native float vector for the elementwise math: 16 lanes on AVX-512, 8 on AVX2. Arithmetic,
// comparisons (which give lane masks of -1/0) and `mask ? a : b` use GCC's vector extensions;
// the rest maps to intrinsics and to SLEEF's vector functions (u10: at most 1.0 ulp), except exp
// and erf, which are kiln's own (devices/cpu/fast_exp.h, fast_erf.h).
// Private to devices/cpu: the public headers never include <immintrin.h> or <sleef.h>.
#pragma once
#include <immintrin.h>
#include <sleef.h>

#include <cstdint>
#include <cstring>

namespace kiln::cpu::simd {

#if defined(__AVX512F__)
inline constexpr int kLanes = 16;
#define KILN_SLEEF(fn) Sleef_##fn##f16_u10avx512f
#define KILN_SLEEF_EXACT(fn) Sleef_##fn##f16_avx512f
#elif defined(__AVX2__)
inline constexpr int kLanes = 8;
#define KILN_SLEEF(fn) Sleef_##fn##f8_u10avx2
#define KILN_SLEEF_EXACT(fn) Sleef_##fn##f8_avx2
#else
#error "kiln's CPU kernels need AVX2 or AVX-512 (build with -march=native or -march=x86-64-v3)"
#endif

// __m512/__m256 without their may_alias attribute, which templates would drop with a warning.
using VF = float __attribute__((vector_size(kLanes * 4)));
// Lane masks (what a comparison of two VF gives) and the byte vector a bool tile loads into.
using VM = std::int32_t __attribute__((vector_size(kLanes * 4)));
using VB = std::uint8_t __attribute__((vector_size(kLanes)));

inline VF load(const float* p) {
  VF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, VF v) { std::memcpy(p, &v, sizeof v); }
// Vector registers a kernel may keep its accumulators and operands in (AVX-512: 32, AVX2: 16).
inline constexpr int kRegisters = kLanes == 16 ? 32 : 16;

// Calls fn.template operator()<R>() with R = count (1..Max) as a compile-time count: register-
// blocked kernels instantiated for each row count of their passes (skinny_gemm, packed_weights).
template <int Max, int R = 1, class Fn> void with_count(std::int64_t count, const Fn& fn) {
  if constexpr (R < Max) {
    if (count > R) return with_count<Max, R + 1>(count, fn);
  }
  fn.template operator()<R>();
}

// x in every lane: one broadcast. (`VF{} + x` cost an add before the broadcast, on the ports the
// FMAs need: half the speed of skinny_gemm's kernels, whose inner loop broadcasts A's values; it
// also turned -0.0f into +0.0f.)
#if defined(__AVX512F__)
inline VF splat(float x) { return reinterpret_cast<VF>(_mm512_set1_ps(x)); }
#else
inline VF splat(float x) { return reinterpret_cast<VF>(_mm256_set1_ps(x)); }
#endif

// Bool tiles hold one byte per element, 0 or 1.
inline VM load_mask(const bool* p) {
  VB b;
  std::memcpy(&b, p, sizeof b);
  return __builtin_convertvector(b, VM) != 0;
}
inline VM splat_mask(bool x) { return VM{} - static_cast<std::int32_t>(x); }
inline void store(bool* p, VM m) {
  const VB b = __builtin_convertvector(m & 1, VB);
  std::memcpy(p, &b, sizeof b);
}

inline VF select(VM m, VF a, VF b) { return m ? a : b; }
inline VF from_mask(VM m) { return select(m, splat(1.0f), splat(0.0f)); }  // 1.0f where set
inline VM isnan(VF x) { return x != x; }

#if defined(__AVX512F__)
// The masked forms (all lanes set) because GCC 12 warns about the unmasked forms' undefined
// pass-through operand.
inline VF sqrt(VF x) { return _mm512_mask_sqrt_ps(x, 0xffff, x); }
inline VF floor(VF x) { return _mm512_mask_roundscale_ps(x, 0xffff, x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
inline VF ceil(VF x) { return _mm512_mask_roundscale_ps(x, 0xffff, x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
inline VF rint(VF x) { return _mm512_mask_roundscale_ps(x, 0xffff, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// a * b + c rounded once. Written out where the bits must not depend on whether the compiler
// contracts a * b + c in a given inlining context (fast_erf.h, fast_exp.h).
inline VF fma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
// x * 2^n for whole n, rounded once (to a subnormal, zero or infinity where it must).
inline VF ldexp(VF x, VF n) { return _mm512_mask_scalef_ps(x, 0xffff, x, n); }
// Lanes of x truncated toward zero; NaN and out-of-range lanes give INT32_MIN.
inline VM truncate_to_int(VF x) {
  return reinterpret_cast<VM>(_mm512_mask_cvttps_epi32(_mm512_setzero_si512(), 0xffff, x));
}
// table[k & 15] in each lane: one permute, so a 16-entry table of coefficients lives in a register.
inline VF lookup16(const float (&table)[16], VM k) {
  const __m512 t = _mm512_load_ps(table);
  return _mm512_mask_permutexvar_ps(t, 0xffff, reinterpret_cast<__m512i>(k), t);
}
#else
inline VM truncate_to_int(VF x) { return reinterpret_cast<VM>(_mm256_cvttps_epi32(x)); }
inline VF lookup16(const float (&table)[16], VM k) {
  const VF lo = _mm256_permutevar8x32_ps(_mm256_load_ps(table), reinterpret_cast<__m256i>(k));
  const VF hi = _mm256_permutevar8x32_ps(_mm256_load_ps(table + 8), reinterpret_cast<__m256i>(k));
  return select((k & 8) != 0, hi, lo);
}
inline VF fma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VF sqrt(VF x) { return _mm256_sqrt_ps(x); }
inline VF floor(VF x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
inline VF ceil(VF x) { return _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
inline VF rint(VF x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// For whole n in [-150, 129] (what exp needs): two factors 2^h and 2^(n-h), each a normal float,
// so only the second product rounds.
inline VF ldexp(VF x, VF n) {
  const VM k = truncate_to_int(n), h = k >> 1;
  VF a, b;
  const VM abits = (h + 127) << 23, bbits = (k - h + 127) << 23;
  std::memcpy(&a, &abits, sizeof a);
  std::memcpy(&b, &bbits, sizeof b);
  return x * a * b;
}
#endif

inline VF abs(VF x) {
  VM bits;
  std::memcpy(&bits, &x, sizeof x);
  bits &= 0x7fffffff;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// |mag| with the sign bit of `sign`.
inline VF copysign(VF mag, VF sign) {
  VM m, s;
  std::memcpy(&m, &mag, sizeof mag);
  std::memcpy(&s, &sign, sizeof sign);
  m = (m & 0x7fffffff) | (s & static_cast<std::int32_t>(0x80000000u));
  std::memcpy(&mag, &m, sizeof mag);
  return mag;
}

// NaN-propagating max/min, like torch.maximum: a NaN in either operand gives NaN.
inline VF maximum(VF a, VF b) { return select(isnan(a) | isnan(b), a + b, select(a > b, a, b)); }
inline VF minimum(VF a, VF b) { return select(isnan(a) | isnan(b), a + b, select(a < b, a, b)); }

inline VF log(VF x) { return KILN_SLEEF(log)(x); }
inline VF log1p(VF x) { return KILN_SLEEF(log1p)(x); }
inline VF expm1(VF x) { return KILN_SLEEF(expm1)(x); }
inline VF sin(VF x) { return KILN_SLEEF(sin)(x); }
inline VF cos(VF x) { return KILN_SLEEF(cos)(x); }
inline VF tan(VF x) { return KILN_SLEEF(tan)(x); }
inline VF tanh(VF x) { return KILN_SLEEF(tanh)(x); }
inline VF pow(VF a, VF b) { return KILN_SLEEF(pow)(a, b); }
inline VF atan2(VF a, VF b) { return KILN_SLEEF(atan2)(a, b); }
inline VF fmod(VF a, VF b) { return KILN_SLEEF_EXACT(fmod)(a, b); }

#undef KILN_SLEEF
#undef KILN_SLEEF_EXACT

}  // namespace kiln::cpu::simd
