// CPU kernels of softmax and log_softmax along one dim, numerically stable (shifted by the max).
// Rows (the dim is the last one): per row a max pass, an exp(x - max) pass that also sums, and
// a scale pass, while the row sits in L1. A large output that is not the input's buffer gets the
// last pass through a row buffer and non-temporal stores, as elementwise kernels do
// (elementwise_driver.h: should_stream). Columns: the same three passes over a tile of the inner
// dim. The output may be the input's buffer: every pass reads element k before it writes
// element k, and later passes read only what earlier ones wrote. Under a fused prologue the
// input is pulled from it: a row at a time into a row buffer, or a tile row per pass.
#include <algorithm>
#include <vector>

#include "kiln/devices/cpu/elementwise_driver.h"
#include "kiln/devices/cpu/reduce_driver.h"
#include "kiln/devices/cpu/reduce_ops.h"
#include "kiln/devices/cpu/reduce_vector_math.h"

namespace kiln::cpu {
namespace {

// One row; `buf` (n floats) stages the result for non-temporal stores to y, or is null to
// write y directly.
// `next` (or null): the row after, asked for a third before each pass, so memory keeps busy
// while the passes work in L1 (a row of 4 KiB is a page, where the hardware prefetcher stops).
template <bool kLog>
void softmax_row(const float* x, float* y, std::int64_t n, float* buf, const float* next) {
  const std::size_t bytes = next ? static_cast<std::size_t>(n) * sizeof(float) : 0;
  prefetch_part(next, bytes, 0, 3);
  const float m = detail::reduce_run(ExtremumReducer<float, true>{}, PlainInput<float>{}, x, 0, n, 0);
  float* out = buf ? buf : y;
  prefetch_part(next, bytes, 1, 3);
  if constexpr (kLog) {
    const float log_sum = std::log(exp_shifted_sum(x, m, nullptr, n));
    prefetch_part(next, bytes, 2, 3);
    for (std::int64_t i = 0; i < n; ++i) out[i] = (x[i] - m) - log_sum;
    if (buf)
      stream_copy(reinterpret_cast<std::byte*>(y), reinterpret_cast<const std::byte*>(buf),
                  static_cast<std::size_t>(n) * sizeof(float));
  } else {
    const float inv = 1.0f / exp_shifted_sum(x, m, out, n);
    prefetch_part(next, bytes, 2, 3);
    if (buf) {
      stream_scale(y, buf, inv, static_cast<std::size_t>(n));  // the scale pass and the copy in one
    } else {
      for (std::int64_t i = 0; i < n; ++i) y[i] *= inv;
    }
  }
}

// Row r of the tile whose first element is `base`, w elements: from memory, or pulled from a
// fused prologue into `tmp`.
struct TileRows {
  const ReduceSource* source;
  const float* x;
  std::int64_t inner;
  const float* row(std::int64_t base, std::int64_t r, std::int64_t w, float* tmp) const {
    if (!source) return x + base + r * inner;
    source->fill(base + r * inner, tmp, w);
    return tmp;
  }
};

// Columns [j0, j0 + w) of output row o.
template <bool kLog>
void softmax_col_tile(const TileRows& in, float* y, const ReduceGeometry& g, std::int64_t o, std::int64_t j0,
                      std::int64_t w) {
  alignas(64) float m[kTile], s[kTile], buf[kTile], tmp[kTile];
  const ExtremumReducer<float, true> max_of;
  const std::int64_t base = o * g.extent * g.inner + j0;
  const float* first = in.row(base, 0, w, tmp);
  std::copy(first, first + w, m);
  for (std::int64_t r = 1; r < g.extent; ++r) {
    const float* row = in.row(base, r, w, tmp);
    for (std::int64_t j = 0; j < w; ++j) m[j] = max_of.step(m[j], row[j]);
  }
  std::fill(s, s + w, 0.0f);
  for (std::int64_t r = 0; r < g.extent; ++r) {
    float* e = kLog ? buf : y + base + r * g.inner;
    exp_shifted(in.row(base, r, w, tmp), m, 1, e, w);
    for (std::int64_t j = 0; j < w; ++j) s[j] += e[j];
  }
  if constexpr (kLog) {
    for (std::int64_t j = 0; j < w; ++j) s[j] = std::log(s[j]);
    for (std::int64_t r = 0; r < g.extent; ++r) {
      const float* row = in.row(base, r, w, tmp);
      float* out = y + base + r * g.inner;
      for (std::int64_t j = 0; j < w; ++j) out[j] = (row[j] - m[j]) - s[j];
    }
  } else {
    for (std::int64_t j = 0; j < w; ++j) s[j] = 1.0f / s[j];
    for (std::int64_t r = 0; r < g.extent; ++r) {
      float* row = y + base + r * g.inner;
      for (std::int64_t j = 0; j < w; ++j) row[j] *= s[j];
    }
  }
}

// x, or the source when it is set (x null then).
template <bool kLog>
void softmax_along(const OpIr& op, const ReduceSource* source, const float* x, float* y) {
  const ReduceGeometry g = geometry_along_dim(op.inputs[0].shape, static_cast<int>(op.attrs.dim));
  if (g.outer * g.extent * g.inner == 0) return;
  if (g.inner == 1) {
    // A fused prologue is pulled a row at a time into a row buffer; the row is then read as x.
    const EwOperand input{x, DType::f32, DType::f32, op.inputs[0].shape};
    const bool stream = should_stream(y, static_cast<std::size_t>(g.outer * g.extent) * sizeof(float),
                                      std::span<const EwOperand>(&input, source ? 0 : 1));
    parallel_for(g.outer, detail::grain_for(g.extent), [&](std::int64_t b, std::int64_t e) {
      // One per task, not per row.
      std::vector<float> buf(stream ? static_cast<std::size_t>(g.extent) : 0);
      std::vector<float> pulled(source ? static_cast<std::size_t>(g.extent) : 0);
      for (std::int64_t o = b; o < e; ++o) {
        const float* row = x + o * g.extent;
        if (source) {
          source->fill(o * g.extent, pulled.data(), g.extent);
          row = pulled.data();
        }
        // The next row from memory; a pulled prologue prefetches for itself.
        const float* next = !source && o + 1 < g.outer ? row + g.extent : nullptr;
        softmax_row<kLog>(row, y + o * g.extent, g.extent, stream ? buf.data() : nullptr, next);
      }
      if (stream) stream_fence();
    });
    return;
  }
  const TileRows in{source, x, g.inner};
  const std::int64_t tiles = detail::ceil_div(g.inner, kTile);
  parallel_for(g.outer * tiles, detail::grain_for(g.extent * std::min(g.inner, kTile)),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t t = b; t < e; ++t) {
                   const std::int64_t o = t / tiles, j0 = (t % tiles) * kTile;
                   softmax_col_tile<kLog>(in, y, g, o, j0, std::min(kTile, g.inner - j0));
                 }
               });
}

template <bool kLog>
void softmax_kernel(const OpIr& op, const KernelArgs& a) {
  KILN_CHECK(op.inputs[0].dtype == DType::f32, op_name(op.kind), "input " + describe(op.inputs[0]) + " must be f32");
  softmax_along<kLog>(op, nullptr, in_ptr<float>(a, 0), out_ptr<float>(a, 0));
}

}  // namespace

void softmax_f32(const OpIr& op, const ReduceSource* source, const float* x, float* y) {
  if (op.kind == OpKind::log_softmax)
    softmax_along<true>(op, source, x, y);
  else
    softmax_along<false>(op, source, x, y);
}

void register_reduce_softmax_kernels(KernelTable& t) {
  t.set(OpKind::softmax, softmax_kernel<false>);
  t.set(OpKind::log_softmax, softmax_kernel<true>);
}

}  // namespace kiln::cpu
