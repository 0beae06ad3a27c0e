// What the direct convolution kernels share: the geometry read from the op, the taps along each
// dim, the window planes a task reads its B operand from, and how outputs split into tasks
// (devices/cpu/conv_gemm.h).
#include "kiln/devices/cpu/conv_gemm.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "kiln/devices/cpu/simd.h"
#include "kiln/ops/attrs_window.h"

namespace kiln::cpu::conv_detail {

ConvGeometry conv_geometry(const OpIr& op, const Shape& x, const Shape& weight, const Shape& y) {
  const ConvAttrs a = ConvAttrs::decode(op);
  const int s = a.dims;
  ConvGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  g.out_channels = y[1];
  g.groups = a.groups;
  for (int d = 0; d < s; ++d) {
    const int e = 3 - s + d;
    g.in[e] = x[2 + d];
    g.out[e] = y[2 + d];
    g.kernel[e] = weight[2 + d];
    g.stride[e] = a.stride[d];
    g.padding[e] = a.padding[d];
    g.dilation[e] = a.dilation[d];
  }
  return g;
}

std::vector<std::int64_t> ConvGeometry::displacements(int d) const {
  std::vector<std::int64_t> v;
  for (std::int64_t k = 0; k < kernel[d]; ++k) v.push_back(k * dilation[d] - padding[d]);
  return v;
}

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// dst[k] = src[first + k * step] where that lies in [0, size), else 0, for k < n.
void gather_row(float* dst, std::int64_t n, const float* src, std::int64_t size, std::int64_t first,
                std::int64_t step) {
  const std::int64_t lo = std::clamp<std::int64_t>(first >= 0 ? 0 : (-first + step - 1) / step, 0, n);
  const std::int64_t hi = std::clamp<std::int64_t>(size - first <= 0 ? 0 : (size - first + step - 1) / step, lo, n);
  std::fill_n(dst, lo, 0.0f);
  std::int64_t k = lo;
  if (step == 1) {
    std::memcpy(dst + lo, src + first + lo, static_cast<std::size_t>(hi - lo) * sizeof(float));
    k = hi;
  } else if (step == 2) {
    // The even elements of two vectors (a phase of a stride-2 source, Winograd's tiles).
#if defined(__AVX512F__)
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (; k + 16 <= hi && first + 2 * (k + 16) <= size; k += 16) {
      const float* from = src + first + 2 * k;
      _mm512_storeu_ps(dst + k, _mm512_permutex2var_ps(_mm512_loadu_ps(from), even, _mm512_loadu_ps(from + 16)));
    }
    if (k < hi) {  // the last few, through masks that keep the loads inside the row
      const std::int64_t count = hi - k, span = 2 * count - 1;
      const float* from = src + first + 2 * k;
      const __m512 a =
          _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << std::min<std::int64_t>(span, 16)) - 1), from);
      const __m512 b =
          _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << std::max<std::int64_t>(span - 16, 0)) - 1), from + 16);
      _mm512_mask_storeu_ps(dst + k, static_cast<__mmask16>((1u << count) - 1), _mm512_permutex2var_ps(a, even, b));
      k = hi;
    }
#else
    for (; k + 8 <= hi && first + 2 * (k + 8) <= size; k += 8) {
      const __m256 pairs =
          _mm256_shuffle_ps(_mm256_loadu_ps(src + first + 2 * k), _mm256_loadu_ps(src + first + 2 * k + 8), 0x88);
      _mm256_storeu_ps(dst + k, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), 0xd8)));
    }
#endif
  }
  for (; k < hi; ++k) dst[k] = src[first + k * step];
  std::fill_n(dst + hi, n - hi, 0.0f);
}

}  // namespace

AxisTaps::AxisTaps(std::int64_t source_stride, std::int64_t source_size, const std::vector<std::int64_t>& displacement)
    : stride(source_stride), size(source_size) {
  for (std::int64_t d : displacement) {
    const std::int64_t a = floor_div(d, stride), phase = d - a * stride;
    auto at = std::find(phases.begin(), phases.end(), phase);
    if (at == phases.end()) at = phases.insert(phases.end(), phase);
    alpha.push_back(a);
    plane.push_back(at - phases.begin());
  }
  if (!alpha.empty()) {
    lo = *std::min_element(alpha.begin(), alpha.end());
    hi = *std::max_element(alpha.begin(), alpha.end());
  }
}

void build_planes(const PlaneSource& src, const AxisTaps& h, const AxisTaps& w, const OutputRange& range,
                  std::int64_t slack, std::vector<float>& storage, WindowPlanes& out) {
  const auto depth_taps = static_cast<std::int64_t>(src.slices.size());
  const auto ph = static_cast<std::int64_t>(h.phases.size()), pw = static_cast<std::int64_t>(w.phases.size());
  out.rows = range.rows() + h.halo();
  out.width = range.columns() + w.halo();
  const std::int64_t plane = out.rows * out.width;
  // Grown, never shrunk: a smaller task's resize would make the next task's zero the difference.
  const auto needed = static_cast<std::size_t>(src.channels * depth_taps * ph * pw * plane + slack);
  if (storage.size() < needed) storage.resize(needed);
  float* dst = storage.data();
  for (std::int64_t c = 0; c < src.channels; ++c) {
    for (std::int64_t t = 0; t < depth_taps; ++t) {
      const std::int64_t s = src.slices[static_cast<std::size_t>(t)];
      const float* slice = s < 0 ? nullptr : src.data + c * src.channel_stride + s * src.slice_size;
      for (std::int64_t i = 0; i < ph; ++i) {
        for (std::int64_t j = 0; j < pw; ++j, dst += plane) {
          const std::int64_t first = (range.w0 + w.lo) * w.stride + w.phases[static_cast<std::size_t>(j)];
          for (std::int64_t r = 0; r < out.rows; ++r) {
            const std::int64_t row = (range.u0 + h.lo + r) * h.stride + h.phases[static_cast<std::size_t>(i)];
            float* to = dst + r * out.width;
            if (slice == nullptr || row < 0 || row >= h.size) {
              std::fill_n(to, out.width, 0.0f);
            } else {
              gather_row(to, out.width, slice + row * w.size, w.size, first, w.stride);
            }
          }
        }
      }
    }
  }
  std::fill_n(dst, slack, 0.0f);
  out.data = storage.data();

  out.offsets.clear();
  for (std::int64_t c = 0; c < src.channels; ++c)
    for (std::int64_t t = 0; t < depth_taps; ++t)
      for (std::int64_t a = 0; a < h.count(); ++a)
        for (std::int64_t b = 0; b < w.count(); ++b)
          out.offsets.push_back((((c * depth_taps + t) * ph + h.plane[a]) * pw + w.plane[b]) * plane +
                                (h.alpha[a] - h.lo) * out.width + (w.alpha[b] - w.lo));
}

OutputRange TaskBlocks::range(std::int64_t block, std::int64_t out_rows, std::int64_t out_columns) const {
  const std::int64_t r = block / column_blocks, c = block % column_blocks;
  return {r * rows, std::min((r + 1) * rows, out_rows), c * columns, std::min((c + 1) * columns, out_columns)};
}

TaskBlocks task_blocks(std::int64_t out_rows, std::int64_t out_columns, std::int64_t planes, const AxisTaps& h,
                       const AxisTaps& w, std::int64_t extra, std::int64_t min_row_blocks, std::int64_t budget) {
  // By default a task's planes within 192 KiB stay in L2 beside the packed weights. The blocks
  // depend on the shapes alone, so the results never depend on the thread count.
  constexpr std::int64_t kMinColumns = 128;
  TaskBlocks t;
  const std::int64_t row_floats = planes * (out_columns + w.halo()) + extra * out_columns;
  if (planes * (1 + h.halo()) * (out_columns + w.halo()) + extra * out_columns > budget) {
    // Not even one whole row fits: one row per task, cut into runs of columns.
    const std::int64_t per_column = planes * (1 + h.halo()) + extra;
    const std::int64_t fit = (budget - planes * (1 + h.halo()) * w.halo()) / std::max<std::int64_t>(per_column, 1);
    t.columns = std::clamp(fit, std::min(out_columns, kMinColumns), out_columns);
  } else {
    const std::int64_t fit =
        (budget - planes * h.halo() * (out_columns + w.halo())) / std::max<std::int64_t>(row_floats, 1);
    const std::int64_t wanted = (out_rows + min_row_blocks - 1) / std::max<std::int64_t>(min_row_blocks, 1);
    t.rows = std::clamp<std::int64_t>(std::min(fit, wanted), 1, out_rows);
    t.columns = out_columns;
  }
  t.row_blocks = (out_rows + t.rows - 1) / t.rows;
  t.column_blocks = (out_columns + t.columns - 1) / t.columns;
  return t;
}

namespace {
std::mutex lease_mutex;
std::vector<std::vector<float>> kept_scratch;  // returned by finished leases
}  // namespace

ScratchLease::ScratchLease() {
  const std::lock_guard lock(lease_mutex);
  if (!kept_scratch.empty()) {
    storage_ = std::move(kept_scratch.back());
    kept_scratch.pop_back();
  }
}

ScratchLease::~ScratchLease() {
  const std::lock_guard lock(lease_mutex);
  kept_scratch.push_back(std::move(storage_));
}

}  // namespace kiln::cpu::conv_detail
