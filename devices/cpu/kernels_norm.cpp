// CPU kernels of batch normalization in training mode (ops/norm.cpp). x [N, C, *spatial] is,
// per channel, N runs of `inner` contiguous values. One task owns a channel at a time and does
// all of its work in a row: the statistics (or the backward's sums), then the elementwise pass
// over the same values, which the first pass has just brought into the core's cache (a ResNet
// channel of [8, 64, 56, 56] is 100 KB). So each op reads its tensors from memory once and
// writes its result once: 1 read + 1 write forward, 2 reads + 1 write backward, where the
// composite of reductions and elementwise ops read them 4 to 10 times.
//
// The sums are in f64, of x - x0 (x0 the channel's first value: the variance never comes from
// the difference of two large sums) and its square; the backward adds those of dy and of
// dy * (x - x0), so it computes the statistics again instead of reading the forward's f32
// ones. The elementwise passes are PyTorch's, y = (x - mean) * (w * invstd) + b and
// dx = (dy - sum(dy) / M - (x - mean) * invstd^2 * sum(dy * (x - mean)) / M) * invstd * w, in f32
// with the mean as two floats (Moments), so data far from zero loses no precision either.
// A channel's arithmetic depends only on the shape, never on the threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/devices/cpu/simd.h"

namespace kiln::cpu {
// A named namespace: a unity build batches this file with others that have their own helpers.
namespace batch_norm_detail {

constexpr int kNormLanes = simd::kLanes;
constexpr int kNormHalf = kNormLanes / 2;
// Half a float vector, and the doubles it widens to (one full vector).
using NormHalf = float __attribute__((vector_size(kNormHalf * 4)));
using NormWide = double __attribute__((vector_size(kNormHalf * 8)));

// Forced inline: GCC kept widen() a call per 8 values (6% of a Fashion-MNIST epoch).
[[gnu::always_inline]] inline NormWide widen(const float* p) {
  NormHalf h;
  std::memcpy(&h, p, sizeof h);
  return __builtin_convertvector(h, NormWide);
}
double total(NormWide v) {
  double s = 0;
  for (int l = 0; l < kNormHalf; ++l) s += v[l];
  return s;
}

// x [N, C, *spatial]: channel c's run n starts at (n * channels + c) * inner.
struct Channels {
  std::int64_t batch, channels, inner;
  explicit Channels(const Shape& s) : batch(s[0]), channels(s[1]), inner(1) {
    for (int d = 2; d < s.rank(); ++d) inner *= s[d];
  }
  std::int64_t count() const { return batch * inner; }  // values per channel
  std::int64_t run(std::int64_t n, std::int64_t c) const { return (n * channels + c) * inner; }
  // Channels per task so that a task is worth about kDefaultGrain values.
  std::int64_t grain() const { return std::max<std::int64_t>(1, kDefaultGrain / std::max<std::int64_t>(count(), 1)); }
};

// f64 sums over runs, in vector lanes (two vectors each, so that the adds overlap) and a
// scalar tail, folded in a fixed order. Values are taken relative to `shift` (the channel's first
// x): the variance then never comes from the difference of two large sums.
struct Sums {
  static constexpr int kSums = 4;
  NormWide v[kSums][2]{};
  double tail[kSums]{};
  double operator[](int i) const { return total(v[i][0] + v[i][1]) + tail[i]; }
};

// 0: x - shift, 1: (x - shift)^2 over x[0, n).
void add_moments(const float* x, std::int64_t n, double shift, Sums& s) {
  const NormWide k = NormWide{} + shift;
  std::int64_t i = 0;
  for (; i + kNormLanes <= n; i += kNormLanes)
    for (int h = 0; h < 2; ++h) {
      const NormWide d = widen(x + i + h * kNormHalf) - k;
      s.v[0][h] += d;
      s.v[1][h] += d * d;
    }
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - shift;
    s.tail[0] += d;
    s.tail[1] += d * d;
  }
}

// The moments, and 2: dy, 3: dy * (x - shift).
void add_gradient_sums(const float* dy, const float* x, std::int64_t n, double shift, Sums& s) {
  const NormWide k = NormWide{} + shift;
  std::int64_t i = 0;
  for (; i + kNormLanes <= n; i += kNormLanes)
    for (int h = 0; h < 2; ++h) {
      const NormWide d = widen(x + i + h * kNormHalf) - k, g = widen(dy + i + h * kNormHalf);
      s.v[0][h] += d;
      s.v[1][h] += d * d;
      s.v[2][h] += g;
      s.v[3][h] += g * d;
    }
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - shift, g = dy[i];
    s.tail[0] += d;
    s.tail[1] += d * d;
    s.tail[2] += g;
    s.tail[3] += g * d;
  }
}

// A channel's mean and biased variance from its moments about `shift` (`count` values).
struct Moments {
  double mean, var;
  // The mean as two floats, hi + lo: x - hi is exact for x near the mean (Sterbenz), so
  // (x - hi) - lo is x - mean to a rounding of the small difference, not of the large x.
  float hi, lo;
  Moments(const Sums& s, double shift, double count) {
    const double d = s[0] / count;
    mean = shift + d;
    var = std::max(0.0, s[1] / count - d * d);
    hi = static_cast<float>(mean);
    lo = static_cast<float>(mean - hi);
  }
};

// y = ((x - hi) - lo) * scale + bias over [0, n).
void normalize(const float* x, float* y, std::int64_t n, const Moments& m, float scale, float bias) {
  const simd::VF hi = simd::splat(m.hi), lo = simd::splat(m.lo), a = simd::splat(scale), b = simd::splat(bias);
  std::int64_t i = 0;
  for (; i + kNormLanes <= n; i += kNormLanes) simd::store(y + i, ((simd::load(x + i) - hi) - lo) * a + b);
  for (; i < n; ++i) y[i] = ((x[i] - m.hi) - m.lo) * scale + bias;
}

// dx = (dy - mean_dy - ((x - hi) - lo) * k) * scale over [0, n).
void input_gradient(const float* dy, const float* x, float* dx, std::int64_t n, const Moments& m, float mean_dy,
                    float k, float scale) {
  const simd::VF gm = simd::splat(mean_dy), hi = simd::splat(m.hi), lo = simd::splat(m.lo);
  const simd::VF kk = simd::splat(k), s = simd::splat(scale);
  std::int64_t i = 0;
  for (; i + kNormLanes <= n; i += kNormLanes)
    simd::store(dx + i, (simd::load(dy + i) - gm - ((simd::load(x + i) - hi) - lo) * kk) * s);
  for (; i < n; ++i) dx[i] = (dy[i] - mean_dy - ((x[i] - m.hi) - m.lo) * k) * scale;
}

void check_f32(const OpIr& op) {
  for (const TensorIr& t : op.inputs)
    KILN_CHECK(t.dtype == DType::f32, op_name(op.kind), "the CPU kernel takes f32 operands, got " + describe(t));
}

// x, weight, bias -> y, mean, var (biased).
void batch_norm_kernel(const OpIr& op, const KernelArgs& a) {
  check_f32(op);
  const Channels v(op.inputs[0].shape);
  const float *x = in_ptr<float>(a, 0), *weight = in_ptr<float>(a, 1), *bias = in_ptr<float>(a, 2);
  float *y = out_ptr<float>(a, 0), *mean_out = out_ptr<float>(a, 1), *var_out = out_ptr<float>(a, 2);
  const double eps = op.attrs.scalar, count = static_cast<double>(v.count());
  parallel_for(v.channels, v.grain(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t c = begin; c < end; ++c) {
      // Every per-channel operand is read before a [C] output, which may share its buffer, is written.
      const double w = weight[c];
      const float b = bias[c];
      if (v.count() == 0) {
        mean_out[c] = var_out[c] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      const double shift = x[v.run(0, c)];
      Sums s;
      for (std::int64_t n = 0; n < v.batch; ++n) add_moments(x + v.run(n, c), v.inner, shift, s);
      const Moments m(s, shift, count);
      const auto scale = static_cast<float>(w / std::sqrt(m.var + eps));
      for (std::int64_t n = 0; n < v.batch; ++n) normalize(x + v.run(n, c), y + v.run(n, c), v.inner, m, scale, b);
      mean_out[c] = static_cast<float>(m.mean);
      var_out[c] = static_cast<float>(m.var);
    }
  });
}

// dy, x, weight -> dx, dweight, dbias. The statistics are computed again, in the same pass as
// the sums of dy: as exact as the forward's, and the forward's outputs need not be kept.
void batch_norm_backward_kernel(const OpIr& op, const KernelArgs& a) {
  check_f32(op);
  const Channels v(op.inputs[1].shape);
  const float *dy = in_ptr<float>(a, 0), *x = in_ptr<float>(a, 1), *weight = in_ptr<float>(a, 2);
  float *dx = out_ptr<float>(a, 0), *dweight = out_ptr<float>(a, 1), *dbias = out_ptr<float>(a, 2);
  const double eps = op.attrs.scalar, count = static_cast<double>(v.count());
  parallel_for(v.channels, v.grain(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t c = begin; c < end; ++c) {
      const double w = weight[c];
      if (v.count() == 0) {
        dweight[c] = dbias[c] = 0.0f;
        continue;
      }
      const double shift = x[v.run(0, c)];
      Sums s;
      for (std::int64_t n = 0; n < v.batch; ++n)
        add_gradient_sums(dy + v.run(n, c), x + v.run(n, c), v.inner, shift, s);
      const Moments m(s, shift, count);
      const double invstd = 1.0 / std::sqrt(m.var + eps);
      // sum(dy * (x - mean)) = sum(dy * (x - shift)) - (mean - shift) * sum(dy)
      const double sum_dy = s[2], dot = s[3] - (m.mean - shift) * sum_dy;
      const auto k = static_cast<float>(dot / count * invstd * invstd);
      for (std::int64_t n = 0; n < v.batch; ++n) {
        const std::int64_t at = v.run(n, c);
        input_gradient(dy + at, x + at, dx + at, v.inner, m, static_cast<float>(sum_dy / count), k,
                       static_cast<float>(invstd * w));
      }
      dweight[c] = static_cast<float>(dot * invstd);
      dbias[c] = static_cast<float>(sum_dy);
    }
  });
}

}  // namespace batch_norm_detail

void register_norm_kernels(KernelTable& t) {
  t.set(OpKind::batch_norm, batch_norm_detail::batch_norm_kernel);
  t.set(OpKind::batch_norm_backward, batch_norm_detail::batch_norm_backward_kernel);
}

}  // namespace kiln::cpu
