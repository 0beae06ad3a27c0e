// The GLSL prelude of every kernel, and the math library with PyTorch's semantics. Vulkan
// leaves many edge cases of GLSL's built-ins undefined (log of a negative, sqrt of a negative,
// atan(0, 0), pow of a negative base) and lets drivers drop NaN checks, so the functions here
// test bits and handle those cases explicitly.
#include <string>

#include "kiln/devices/vulkan/vk_device.h"

namespace kiln::vk {

namespace {

constexpr const char* kHeader = R"(#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require
)";

// SignedZeroInfNanPreserve (SPV_KHR_float_controls) for 32-bit floats: without it a driver may
// assume no NaN and, for instance, turn `x < 0.0 ? 0.0 : x` into max(x, 0.0), which maps NaN
// to 0 (NVIDIA does). Emitted where the device supports it.
constexpr const char* kNanPreserve = R"(#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
)";

constexpr const char* k16BitStorage = "#extension GL_EXT_shader_16bit_storage : require\n";
constexpr const char* kF16Math = "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
constexpr const char* kF16s = R"(
layout(buffer_reference, std430, buffer_reference_align = 2) buffer F16s { float16_t v[]; };
)";

// f16 and bf16 tensors are stored as 16-bit words (U16s) and held in registers as f32: loads
// convert exactly, stores round to nearest even as PyTorch does (NaN stays NaN: f16 keeps the
// sign with 0x7e00, bf16 gives 0x7fc0). kiln_round_f16 / kiln_round_bf16 round an f32 to the
// nearest 16-bit value and keep it an f32: what every node of a 16-bit op does (f16 overflows
// to infinity from 65520; its subnormals are multiples of 2^-24).
constexpr const char* k16BitTypes = R"(
layout(buffer_reference, std430, buffer_reference_align = 2) buffer U16s { uint16_t v[]; };

float kiln_bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }
uint kiln_f32_to_bf16(float x) {
  uint u = floatBitsToUint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
float kiln_round_bf16(float x) {
  uint u = floatBitsToUint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;
  return uintBitsToFloat((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}
)";

// f16 by plain bit arithmetic, where the device cannot be asked for round-to-nearest-even f16
// conversions that keep subnormals: the result never depends on the driver's modes.
constexpr const char* kF16ByBits = R"(
float kiln_f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0u) return uintBitsToFloat(sign | floatBitsToUint(float(m) * 5.9604644775390625e-8));
  if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}
uint kiln_f32_to_f16(float x) {
  uint u = floatBitsToUint(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;            // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;           // rounds beyond 65504: infinity
  if (a < 0x38800000u)                                   // f16 subnormal (or zero): units of 2^-24
    return sign | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
  uint r = a - 0x38000000u;                              // rebias the exponent (127 -> 15)
  return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
}
float kiln_round_f16(float x) {
  uint u = floatBitsToUint(x), a = u & 0x7fffffffu;
  if (a < 0x38800000u) return roundEven(x * 16777216.0) * 5.9604644775390625e-8;  // keeps -0
  if (a >= 0x477ff000u) return a > 0x7f800000u ? x : uintBitsToFloat((u & 0x80000000u) | 0x7f800000u);
  return uintBitsToFloat((u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu);
}
)";

// f16 through the hardware's conversions, where the device lets a kernel ask for f16 results
// rounded to nearest even with subnormals kept (SPV_KHR_float_controls: RoundingModeRTE and
// DenormPreserve for 16 bits): a few instructions each way instead of a dozen or more. On an
// H200 the bit arithmetic made the five-op f16 GELU compute-bound (109 us of GPU time against
// 37 for f32). NVIDIA's compiler drops a plain round trip, float(float16_t(x)), as if it were
// exact (x came back unrounded), so the rounding multiplies the f16 value by a one that it
// cannot see at compile time (every dispatch has at least one workgroup).
constexpr const char* kF16Modes = R"(#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 16);
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 16);
)";
constexpr const char* kF16ByHardware = R"(
float kiln_f16_to_f32(uint h) { return float(unpackFloat2x16(h).x); }  // the low 16 bits
uint kiln_f32_to_f16(float x) { return packFloat2x16(f16vec2(float16_t(x), float16_t(0.0))); }
float kiln_round_f16(float x) { return float(float16_t(x) * float16_t(min(gl_NumWorkGroups.x, 1u))); }
)";

constexpr const char* kPreludeBody = R"(
// PushConstants of vk_pipeline_cache.h: the argument block's first KILN_PUSH_WORDS words inline,
// the rest at `args`.
layout(push_constant) uniform KilnPush { uint64_t args; uint64_t error_flag; uint64_t w[KILN_PUSH_WORDS]; } kiln_push;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer KilnWords { uint64_t w[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32s { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer I64s { int64_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32s { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32s { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer U8s { uint8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer KilnErrorFlag { uint code; };

uint64_t arg_u64(uint i) {
  return i < KILN_PUSH_WORDS ? kiln_push.w[i] : KilnWords(kiln_push.args).w[i - KILN_PUSH_WORDS];
}
int64_t arg_i64(uint i) { return int64_t(arg_u64(i)); }
uint arg_u32(uint i) { return uint(arg_u64(i)); }
float arg_f32(uint i) { return uintBitsToFloat(uint(arg_u64(i))); }

// The first error a kernel raises is kept; the host reads it when it next waits for the device.
void kiln_raise(uint code) { atomicCompSwap(KilnErrorFlag(kiln_push.error_flag).code, 0u, code); }

#define KILN_FOR_EACH(i, n) for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)

const int64_t KILN_I64_MIN = -9223372036854775807l - 1l;

bool kiln_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool kiln_isinf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool kiln_signbit(float x) { return (floatBitsToUint(x) & 0x80000000u) != 0u; }
float kiln_nan() { return uintBitsToFloat(0x7fc00000u); }
float kiln_inf() { return uintBitsToFloat(0x7f800000u); }
float kiln_copysign(float x, float s) {
  return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(s) & 0x80000000u));
}

// torch.maximum / minimum: NaN if either operand is NaN.
float kiln_maximum(float a, float b) { return kiln_isnan(a) || kiln_isnan(b) ? kiln_nan() : max(a, b); }
float kiln_minimum(float a, float b) { return kiln_isnan(a) || kiln_isnan(b) ? kiln_nan() : min(a, b); }

float kiln_log(float x) {
  if (kiln_isnan(x) || x < 0.0) return kiln_nan();
  if (x == 0.0) return -kiln_inf();
  if (kiln_isinf(x)) return x;
  return log(x);
}
float kiln_sqrt(float x) { return kiln_isnan(x) || x < 0.0 ? kiln_nan() : sqrt(x); }
float kiln_exp(float x) {
  if (kiln_isnan(x)) return x;
  if (x > 88.72284) return kiln_inf();
  if (x < -103.97208) return 0.0;
  return exp(x);
}

// log1p and expm1 near 0 do not go through the driver's log and exp: Vulkan lets those carry an
// absolute error of about 2^-21 near 1 (lavapipe and NVIDIA both do), which swamps a result of
// 1e-6 (Kahan's forms, log(u) * x / (u - 1), assumed them exact: expm1(-2e-6) came out 5% off).
// For |x| < 0.5 each is a short series that stays within a few ulp: log1p(x) = 2 atanh(s) with
// s = x / (2 + x), |s| <= 1/3, through s^17; expm1 by Taylor through x^10 (the next term is
// under 2^-34 of x).
float kiln_log1p(float x) {
  if (kiln_isnan(x)) return x;
  if (abs(x) >= 0.5) return kiln_log(1.0 + x);
  float s = x / (2.0 + x), s2 = s * s;
  float p = 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  return 2.0 * s + 2.0 * s * (s2 * p);
}
float kiln_expm1(float x) {
  if (kiln_isnan(x)) return x;
  if (x > 88.72284) return kiln_inf();
  if (x < -20.0) return -1.0;
  if (abs(x) > 0.5) return exp(x) - 1.0;  // no cancellation to fear
  if (x == 0.0) return x;                 // keeps -0
  float p = 1.0 / 3628800.0;
  p = p * x + 1.0 / 362880.0;
  p = p * x + 1.0 / 40320.0;
  p = p * x + 1.0 / 5040.0;
  p = p * x + 1.0 / 720.0;
  p = p * x + 1.0 / 120.0;
  p = p * x + 1.0 / 24.0;
  p = p * x + 1.0 / 6.0;
  p = p * x + 0.5;
  return x + x * (x * p);
}

float kiln_tanh(float x) {
  if (kiln_isnan(x)) return x;
  float a = abs(x);
  if (a > 9.1) return kiln_copysign(1.0, x);
  float e = kiln_expm1(-2.0 * a);
  return kiln_copysign(-e / (2.0 + e), x);
}

// erf with a maximum error under 1e-7 (N. Juffa's float erf: two minimax polynomials).
float kiln_erf(float a) {
  float t = abs(a), s = a * a, r;
  if (kiln_isnan(a)) return a;
  if (t > 0.927734375) {
    r = fma(-1.72853470e-5, t, 3.83197126e-4);
    float u = fma(-3.88396438e-3, t, 2.42546219e-2);
    r = fma(r, s, u);
    r = fma(r, t, -1.06777877e-1);
    r = fma(r, t, -6.34846687e-1);
    r = fma(r, t, -1.28717512e-1);
    r = fma(r, t, -t);
    r = 1.0 - kiln_exp(r);
    r = kiln_copysign(r, a);
  } else {
    r = -5.96761703e-4;
    r = fma(r, s, 4.99119423e-3);
    r = fma(r, s, -2.67681349e-2);
    r = fma(r, s, 1.12819925e-1);
    r = fma(r, s, -3.76125336e-1);
    r = fma(r, s, 1.28379166e-1);
    r = fma(r, a, a);
  }
  return r;
}

bool kiln_is_odd_integer(float b) {
  return abs(b) < 16777216.0 && floor(b) == b && (int(abs(b)) & 1) == 1;
}

// log2(m) for m in [sqrt(1/2), sqrt(2)) to about an ulp: 2 atanh(s) / ln 2, s = (m-1)/(m+1).
float kiln_log2_near1(float m) {
  float f = m - 1.0;  // exact (Sterbenz)
  float s = f / (2.0 + f), z = s * s;
  float p = fma(fma(fma(fma(z, 0.18181818, 0.22222222), z, 0.28571429), z, 0.4), z, 0.66666667);
  return fma(s * z, p, 2.0 * s) * 1.44269504088896341;
}
// The rounding error of p = a * b (Dekker's product, exact without relying on fma).
float kiln_two_product_error(float a, float b, float p) {
  precise float ca = 4097.0 * a, cb = 4097.0 * b;
  precise float ah = ca - (ca - a), bh = cb - (cb - b);
  precise float al = a - ah, bl = b - bh;
  precise float err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  return err;
}

// torch.pow (C's powf): every special case of IEEE pow, then exp2(b * log2|a|).
float kiln_pow(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (kiln_isnan(a) || kiln_isnan(b)) return kiln_nan();
  float aa = abs(a);
  if (kiln_isinf(b)) {
    if (aa == 1.0) return 1.0;
    return (aa > 1.0) == (b > 0.0) ? kiln_inf() : 0.0;
  }
  bool odd = kiln_is_odd_integer(b);
  if (a == 0.0) {
    float r = b > 0.0 ? 0.0 : kiln_inf();
    return odd ? kiln_copysign(r, a) : r;
  }
  if (kiln_isinf(a)) {
    float r = b > 0.0 ? kiln_inf() : 0.0;
    return (a < 0.0 && odd) ? -r : r;
  }
  if (a < 0.0 && floor(b) != b) return kiln_nan();
  // b * log2|a| carried as a head and a tail, then 2^t as 2^n * 2^f with |f| <= 1/2: drivers'
  // log2 and exp2 are only accurate to about 1e-7 absolute, which b = 100 turns into 1e-5
  // relative; ldexp is exact, and 0.5^-100 must be exactly 2^100.
  int e;
  float m = frexp(aa, e);
  if (m < 0.70710678) { m *= 2.0; e -= 1; }
  float lh = float(e) + kiln_log2_near1(m);
  precise float ll = (float(e) - lh) + kiln_log2_near1(m);
  precise float th = b * lh;
  precise float tl = kiln_two_product_error(b, lh, th) + b * ll;
  float r;
  if (th > 129.0) {
    r = kiln_inf();
  } else if (th < -151.0) {
    r = 0.0;
  } else {
    float n = roundEven(th);
    precise float f = (th - n) + tl;
    // ldexp is undefined when its result overflows; the final multiply rounds to inf instead.
    r = ldexp(exp2(f), int(n) - 1) * 2.0;
  }
  return (a < 0.0 && odd) ? -r : r;
}

// torch.remainder: the remainder of floor division, with the divisor's sign.
float kiln_remainder(float a, float b) {
  if (kiln_isnan(a) || kiln_isnan(b) || kiln_isinf(a) || b == 0.0) return kiln_nan();
  float m;
  if (kiln_isinf(b)) {
    m = a;
  } else {
    // fmod by binary long division: each step subtracts |b| scaled to within a factor of two of
    // the rest, which is exact (Sterbenz), so the result is exact for every quotient size.
    float ab = abs(b), r = abs(a);
    int eb;
    frexp(ab, eb);
    while (r >= ab) {
      int er;
      frexp(r, er);
      float t = ldexp(ab, er - eb);
      if (t > r) t *= 0.5;
      r -= t;
    }
    m = kiln_copysign(r, a);
  }
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) m += b;
  return m;
}

float kiln_atan2(float y, float x) {
  if (kiln_isnan(x) || kiln_isnan(y)) return kiln_nan();
  const float pi = 3.14159265358979;
  if (y == 0.0) return kiln_signbit(x) ? kiln_copysign(pi, y) : y;
  if (x == 0.0) return kiln_copysign(pi / 2.0, y);
  if (kiln_isinf(x) && kiln_isinf(y)) return kiln_copysign(x > 0.0 ? pi / 4.0 : 3.0 * pi / 4.0, y);
  if (kiln_isinf(x)) return x > 0.0 ? kiln_copysign(0.0, y) : kiln_copysign(pi, y);
  if (kiln_isinf(y)) return kiln_copysign(pi / 2.0, y);
  return atan(y, x);
}

// sin, cos and tan with their own range reduction: Vulkan bounds the built-ins' error only on
// [-pi, pi], and NVIDIA's lose about 1e-5 relative by |x| = 100 (PyTorch reduces exactly).
// x = k * pi/2 + r, |r| <= pi/4, quadrant = k mod 4. Below |x| = 1e5: pi/2 in four f32 parts
// (Cody and Waite) whose first three have 8 significant bits, so every k * part is exact while
// |k| < 2^16 and r keeps about 1e-7 relative error without relying on a fused multiply-add
// (Vulkan lets fma round twice, and lavapipe does). From 1e5 up: Payne and Hanek's reduction,
// below. The polynomials are Cephes' single-precision minimax fits on [-pi/4, pi/4].
float kiln_reduce_pio2_small(float x, out int quadrant) {
  float k = roundEven(x * 0.636619772367581343);
  precise float r = x - k * 1.5703125;
  r = r - k * 4.825592041015625e-4;
  r = r - k * 1.2665987014770508e-6;
  r = r - k * 9.92093629470503e-10;
  quadrant = int(k) & 3;
  return r;
}
// The bits of 2/pi after the binary point, 32 to a word, after a word of zeros (the integer
// part and the bits a small exponent would reach before the point).
const uint kiln_two_over_pi[8] = uint[8](0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
                                         0x3c439041u, 0xfe5163abu);
// 32 bits of that table from bit j on (j < 224).
uint kiln_two_over_pi_bits(uint j) {
  const uint w = j >> 5, shift = j & 31u;
  const uint next = w + 1u < 8u ? kiln_two_over_pi[w + 1u] : 0u;
  return shift == 0u ? kiln_two_over_pi[w] : (kiln_two_over_pi[w] << shift) | (next >> (32u - shift));
}
// Payne and Hanek: x = m * 2^e (m the 24-bit significand) times 2/pi, exactly, modulo 4. Bits of
// 2/pi whose product with m has weight 4 or more drop out of the quadrant, bits more than 94
// places below the point of x * 2/pi fall below what r needs (even next to a multiple of pi/2
// a float keeps 30 or more bits of r): so m times the 96 bits of 2/pi from place e - 1 on, as
// three 64-bit products, carries the quadrant in its top two bits and r in the 94 below. For
// finite |x| >= 2^16 (e >= -7).
float kiln_reduce_pio2_large(float x, out int quadrant) {
  const uint bits = floatBitsToUint(x);
  const uint64_t m = uint64_t((bits & 0x7fffffu) | 0x800000u);
  const uint j = ((bits >> 23) & 0xffu) - 120u;  // table bit of place e - 1: e + 30 = exponent - 120
  const uint64_t p0 = m * kiln_two_over_pi_bits(j), p1 = m * kiln_two_over_pi_bits(j + 32u),
                 p2 = m * kiln_two_over_pi_bits(j + 64u);
  const uint64_t mid = (p2 >> 32) + (p1 & 0xffffffffUL);
  const uint top = uint((p1 >> 32) + (p0 & 0xffffffffUL) + (mid >> 32));
  uint q = top >> 30;
  // The fraction of x * 2/pi, times 2^64.
  uint64_t f = (uint64_t(top & 0x3fffffffu) << 34) | (uint64_t(uint(mid)) << 2) | uint64_t(uint(p2) >> 30);
  const bool above_half = (f >> 63) != 0;
  if (above_half) {  // r = f - 1: the next multiple of pi/2 is nearer
    f = -f;
    q += 1u;
  }
  const bool negative = (bits >> 31) != 0u;
  quadrant = int(negative ? 0u - q : q) & 3;
  if (f == 0) return 0.0;  // no float is a multiple of pi/2; kept for safety
  const uint high = uint(f >> 32);
  const int lead = high != 0u ? 31 - findMSB(high) : 63 - findMSB(uint(f));
  const float r = ldexp(float(uint((f << lead) >> 32)) * 1.57079632679489662, -(32 + lead));
  return (above_half != negative) ? -r : r;
}
float kiln_reduce_pio2(float x, out int quadrant) {
  return abs(x) < 100000.0 ? kiln_reduce_pio2_small(x, quadrant) : kiln_reduce_pio2_large(x, quadrant);
}
float kiln_sin_poly(float r) {
  float z = r * r;
  return fma(fma(fma(-1.9515295891e-4, z, 8.3321608736e-3), z, -1.6666654611e-1) * z, r, r);
}
float kiln_cos_poly(float r) {
  float z = r * r;
  return fma(fma(fma(2.443315711809948e-5, z, -1.388731625493765e-3), z, 4.166664568298827e-2) * z, z,
             fma(-0.5, z, 1.0));
}
float kiln_tan_poly(float r) {
  float z = r * r;
  float p = fma(fma(fma(fma(fma(9.38540185543e-3, z, 3.11992232697e-3), z, 2.44301354525e-2), z,
                            5.34112807005e-2), z, 1.33387994085e-1), z, 3.33331568548e-1);
  return fma(p * z, r, r);
}
float kiln_sin(float x) {
  if (kiln_isinf(x) || kiln_isnan(x)) return kiln_nan();
  if (abs(x) <= 0.785398163) return kiln_sin_poly(x);  // keeps -0.0
  int q;
  float r = kiln_reduce_pio2(x, q);
  float v = (q & 1) == 0 ? kiln_sin_poly(r) : kiln_cos_poly(r);
  return (q & 2) == 0 ? v : -v;
}
float kiln_cos(float x) {
  if (kiln_isinf(x) || kiln_isnan(x)) return kiln_nan();
  if (abs(x) <= 0.785398163) return kiln_cos_poly(x);
  int q;
  float r = kiln_reduce_pio2(x, q);
  float v = (q & 1) == 0 ? kiln_cos_poly(r) : kiln_sin_poly(r);
  return ((q + 1) & 2) == 0 ? v : -v;
}
float kiln_tan(float x) {
  if (kiln_isinf(x) || kiln_isnan(x)) return kiln_nan();
  if (abs(x) <= 0.785398163) return kiln_tan_poly(x);
  int q;
  float t = kiln_tan_poly(kiln_reduce_pio2(x, q));
  return (q & 1) == 0 ? t : -1.0 / t;
}

// f32 -> i64 as PyTorch on x86: truncation; NaN and out-of-range values give i64's minimum.
int64_t kiln_f32_to_i64(float x) {
  return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? int64_t(x) : KILN_I64_MIN;
}

// torch.remainder on i64: a zero divisor raises `code` (the op) and gives 0.
int64_t kiln_remainder_i64(int64_t a, int64_t b, uint code) {
  if (b == 0l) { kiln_raise(code); return 0l; }
  if (b == -1l) return 0l;
  int64_t r = a - (a / b) * b;
  if (r != 0l && ((r < 0l) != (b < 0l))) r += b;
  return r;
}

// torch's integer pow: a negative exponent gives 0 unless |a| == 1; wraps on overflow.
int64_t kiln_pow_i64(int64_t a, int64_t b) {
  if (b < 0l) {
    if (a == 1l) return 1l;
    if (a == -1l) return (b & 1l) != 0l ? -1l : 1l;
    return 0l;
  }
  uint64_t result = 1ul, base = uint64_t(a);
  for (uint64_t e = uint64_t(b); e != 0ul; e >>= 1) {
    if ((e & 1ul) != 0ul) result *= base;
    base *= base;
  }
  return int64_t(result);
}
)";

}  // namespace

std::string kernel_prelude(const VulkanDevice& dev) {
  const PhysicalDeviceInfo& info = dev.context().info();
  std::string s = kHeader;
  if (info.nan_preserve_f32) s += kNanPreserve;
  if (info.storage_16bit) s += k16BitStorage;
  if (info.storage_16bit && info.shader_float16) s += kF16Math;
  if (info.storage_16bit && info.f16_conversions) s += kF16Modes;
  s += "const uint KILN_PUSH_WORDS = " + std::to_string(kPushWords) + "u;\n";
  s += kPreludeBody;
  if (info.storage_16bit) s += k16BitTypes;
  if (info.storage_16bit) s += info.f16_conversions ? kF16ByHardware : kF16ByBits;
  if (info.storage_16bit && info.shader_float16) s += kF16s;
  return s;
}

}  // namespace kiln::vk
