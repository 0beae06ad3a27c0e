#include "kiln/devices/cpu/reduce_vector_math.h"

#include <algorithm>
#include <cstring>

#include "kiln/devices/cpu/elementwise_loops.h"
#include "kiln/devices/cpu/fast_exp.h"

namespace kiln::cpu {

namespace {

using simd::VF;

struct ExpOfDifference {
  VF operator()(VF x, VF c) const { return simd::exp(x - c); }
};

}  // namespace

void exp_shifted(const float* x, const float* c, std::int64_t c_stride, float* y, std::int64_t n) {
  loops::map2_f32(x, 1, c, c_stride, y, n, ExpOfDifference{});
}

float exp_shifted_sum(const float* x, float c, float* y, std::int64_t n) {
  const VF cs = simd::splat(c);
  // Two sums, so that consecutive vectors' additions do not wait on each other.
  VF s0{}, s1{};
  std::int64_t i = 0;
  for (; i + 2 * simd::kLanes <= n; i += 2 * simd::kLanes) {
    const VF e0 = simd::exp(simd::load(x + i) - cs), e1 = simd::exp(simd::load(x + i + simd::kLanes) - cs);
    if (y) simd::store(y + i, e0), simd::store(y + i + simd::kLanes, e1);
    s0 += e0;
    s1 += e1;
  }
  for (; i < n; i += simd::kLanes) {
    const auto m = static_cast<std::size_t>(std::min<std::int64_t>(simd::kLanes, n - i));
    alignas(64) float xb[simd::kLanes] = {}, eb[simd::kLanes];
    std::memcpy(xb, x + i, m * sizeof(float));
    simd::store(eb, simd::exp(simd::load(xb) - cs));
    if (y) std::memcpy(y + i, eb, m * sizeof(float));
    for (int l = static_cast<int>(m); l < simd::kLanes; ++l) eb[l] = 0.0f;  // padding lanes add nothing
    s0 += simd::load(eb);
  }
  alignas(64) float lanes[simd::kLanes];
  simd::store(lanes, s0 + s1);
  for (int w = simd::kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  return lanes[0];
}

}  // namespace kiln::cpu
