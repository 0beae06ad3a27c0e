// The 16-bit float encodings of f16 and bf16 on the host: rounding an f32 to nearest even, as
// the Vulkan kernels' kiln_f32_to_f16 / kiln_f32_to_bf16 do (devices/vulkan/vk_prelude.cpp),
// so that a fill value written by the host equals the one a kernel would have stored.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln {

inline std::uint32_t float_bits(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline std::uint16_t f16_bits(float x) {
  const std::uint32_t u = float_bits(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds beyond 65504
  if (a < 0x38800000u)  // f16 subnormal (or zero): units of 2^-24, rounded half to even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(std::fabs(x) * 16777216.0f)));
  const std::uint32_t r = a - 0x38000000u;  // rebias the exponent (127 -> 15)
  return static_cast<std::uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}

inline std::uint16_t bf16_bits(float x) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace kiln
