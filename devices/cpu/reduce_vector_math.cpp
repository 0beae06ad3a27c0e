#include "devices/cpu/reduce_vector_math.h"

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cmath>

namespace kiln::cpu {

#if defined(__AVX512F__)

void exp_shifted(const float* x, const float* c, std::int64_t c_stride, float* y, std::int64_t n) {
  std::int64_t i = 0;
  const __m512 cs = _mm512_set1_ps(c[0]);
  for (; i + 16 <= n; i += 16) {
    const __m512 ci = c_stride == 0 ? cs : _mm512_loadu_ps(c + i);
    _mm512_storeu_ps(y + i, Sleef_expf16_u10(_mm512_sub_ps(_mm512_loadu_ps(x + i), ci)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 ci = c_stride == 0 ? cs : _mm512_maskz_loadu_ps(m, c + i);
    _mm512_mask_storeu_ps(y + i, m, Sleef_expf16_u10(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), ci)));
  }
}

float exp_shifted_sum(const float* x, float c, float* y, std::int64_t n) {
  const __m512 cs = _mm512_set1_ps(c);
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 e0 = Sleef_expf16_u10(_mm512_sub_ps(_mm512_loadu_ps(x + i), cs));
    const __m512 e1 = Sleef_expf16_u10(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), cs));
    if (y) _mm512_storeu_ps(y + i, e0), _mm512_storeu_ps(y + i + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 e = Sleef_expf16_u10(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), cs));
    if (y) _mm512_mask_storeu_ps(y + i, m, e);
    s0 = _mm512_mask_add_ps(s0, m, s0, e);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(s0, s1));
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  return lanes[0];
}

#else  // AVX2 (the -march=x86-64-v3 build)

namespace {
constexpr int kW = 8;
// Runs f on 8 lanes of a possibly partial block, through a padded copy for the tail.
template <class F>
void block8(const float* x, const float* c, std::int64_t c_stride, float* y, std::int64_t m, F&& f) {
  alignas(32) float xb[kW] = {}, cb[kW] = {}, yb[kW];
  for (std::int64_t j = 0; j < m; ++j) xb[j] = x[j], cb[j] = c[j * c_stride];
  _mm256_store_ps(yb, Sleef_expf8_u10(_mm256_sub_ps(_mm256_load_ps(xb), _mm256_load_ps(cb))));
  f(yb);
  if (y) std::copy(yb, yb + m, y);
}
}  // namespace

void exp_shifted(const float* x, const float* c, std::int64_t c_stride, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += kW)
    block8(x + i, c + i * c_stride, c_stride, y + i, std::min<std::int64_t>(kW, n - i), [](const float*) {});
}

float exp_shifted_sum(const float* x, float c, float* y, std::int64_t n) {
  float lanes[kW] = {};
  for (std::int64_t i = 0; i < n; i += kW) {
    const std::int64_t m = std::min<std::int64_t>(kW, n - i);
    block8(x + i, &c, 0, y ? y + i : nullptr, m, [&](const float* e) {
      for (std::int64_t j = 0; j < m; ++j) lanes[j] += e[j];
    });
  }
  for (int w = kW / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  return lanes[0];
}

#endif

}  // namespace kiln::cpu
