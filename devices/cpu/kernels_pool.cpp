// CPU kernels of the pooling ops (f32). The forwards work an output row at a time: for each
// kernel offset (kh, kw) in torch's order, one pass over the outputs whose window element at that
// offset lies inside the input, vectorized along the row where the stride is 1 or 2 (stride 2:
// two vector loads, the even lanes kept), into a row of running maxima (with their positions)
// or sums that stays in L1. Each output so sees its window's elements in the order torch's loop
// does (rows, then columns), which decides ties (the first maximum wins, and the last NaN), and
// an average's sum is torch's bit for bit. Rows split over the cores (oneTBB, parallel.h).
//
// The gradients own whole planes (N * C of them split over the cores), zero them and add each
// output's share in output order: max pooling's dy into the element its index names, average
// pooling's dy / divisor into every element of its window. Overlapping windows so add up in the
// order torch's CPU kernels use, and the Vulkan kernels' too (each input element summing the
// windows that cover it, in output order): the same bits on both devices.
#include <limits>
#include <vector>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/devices/cpu/simd.h"
#include "kiln/devices/pool_geometry.h"

namespace kiln::cpu {
namespace pool {

using simd::kLanes;
using simd::VF;
using simd::VM;

// The per-vector helpers below run once per vector of a row: GCC kept them out of line, and
// the calls took a third of the forward's time; the row functions are flattened too.
#define KILN_POOL_INLINE [[gnu::always_inline]] inline

// The outputs o in [0, out) whose input coordinate o * stride + offset lies in [0, size).
struct Covered {
  std::int64_t lo, hi;
};
KILN_POOL_INLINE Covered covered(std::int64_t offset, std::int64_t stride, std::int64_t size, std::int64_t out) {
  const std::int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const std::int64_t hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  return {std::min(lo, out), std::clamp(hi, std::min(lo, out), out)};
}

// Lanes 0, 2, 4, ... of a, then of b: the elements a stride-2 row of outputs reads.
KILN_POOL_INLINE VF even_lanes(VF a, VF b) {
#if defined(__AVX512F__)
  return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#else
  return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#endif
}

// Lanes [0, n) of p, the rest 0; n in [0, kLanes], and only those n elements are read (a row's
// last output may read its last element: the next may lie past the buffer).
#if defined(__AVX512F__)
using Lanes = __mmask16;
KILN_POOL_INLINE Lanes first_lanes(int n) { return static_cast<Lanes>((1u << n) - 1); }
KILN_POOL_INLINE VF load_n(const float* p, int n) {
  return reinterpret_cast<VF>(_mm512_maskz_loadu_ps(first_lanes(n), p));
}
KILN_POOL_INLINE void store_n(float* p, VF v, int n) {
  _mm512_mask_storeu_ps(p, first_lanes(n), reinterpret_cast<__m512>(v));
}
KILN_POOL_INLINE void store_n(std::int32_t* p, VM v, int n) {
  _mm512_mask_storeu_epi32(p, first_lanes(n), reinterpret_cast<__m512i>(v));
}
#else
KILN_POOL_INLINE __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
KILN_POOL_INLINE VF load_n(const float* p, int n) {
  return reinterpret_cast<VF>(_mm256_maskload_ps(p, first_lanes(n)));
}
KILN_POOL_INLINE void store_n(float* p, VF v, int n) {
  _mm256_maskstore_ps(p, first_lanes(n), reinterpret_cast<__m256>(v));
}
KILN_POOL_INLINE void store_n(std::int32_t* p, VM v, int n) {
  _mm256_maskstore_epi32(reinterpret_cast<int*>(p), first_lanes(n), reinterpret_cast<__m256i>(v));
}
#endif

// The elements that outputs ow .. ow + n - 1 (n in [1, kLanes]) read from `row` at `at`, the
// first output's: kStride 1 or 2 (two loads of which the even lanes are kept). Lanes past n
// hold 0. A full vector (n == kLanes) of stride 2 loads its last output's right neighbour too,
// unless told it may not (`last`: only what the outputs need).
template <int kStride>
KILN_POOL_INLINE VF load_outputs(const float* row, std::int64_t at, int n, bool last) {
  if (!last && n == kLanes) {
    if constexpr (kStride == 1)
      return simd::load(row + at);
    else
      return even_lanes(simd::load(row + at), simd::load(row + at + kLanes));
  }
  if constexpr (kStride == 1) return load_n(row + at, n);
  const int need = 2 * n - 1;
  return even_lanes(load_n(row + at, std::min(need, kLanes)), load_n(row + at + kLanes, std::max(need - kLanes, 0)));
}

// l * kStride in lane l: where each output's element lies from the first one's.
template <int kStride>
KILN_POOL_INLINE VM lane_offsets() {
  VM v;
  for (int l = 0; l < kLanes; ++l) v[l] = l * kStride;
  return v;
}

KILN_POOL_INLINE VM load_ints(const std::int32_t* p) {
  VM v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Calls pass(ow, n, last) over vectors of outputs covering [lo, hi): whole vectors while their
// loads stay inside the row (for stride 2 that includes the last output's right neighbour),
// then at most two of the rest, the last told to load only what its outputs need. The row
// buffers the passes update hold kLanes spare elements past the row's end.
template <int kStride, class Pass>
KILN_POOL_INLINE void vector_passes(Covered c, std::int64_t off, std::int64_t W, const Pass& pass) {
  std::int64_t ow = c.lo;
  for (; ow + kLanes <= c.hi && (ow + kLanes) * kStride + off <= W; ow += kLanes) pass(ow, kLanes, false);
  while (ow < c.hi) {
    const int n = static_cast<int>(std::min<std::int64_t>(kLanes, c.hi - ow));
    pass(ow, n, true);
    ow += n;
  }
}

// ---- max_pool ----

// best[ow] / at[ow] take element ow * sw + off of `row` (plane position row_at + that) for ow in
// [lo, hi) where it is greater, or NaN. kStride: 1 or 2 (vectorized), 0 for any stride (scalar).
template <int kStride, bool kIndices>
KILN_POOL_INLINE void max_pass(const float* row, std::int64_t row_at, std::int64_t off, std::int64_t sw, Covered c,
                               std::int64_t W, float* best, std::int32_t* at) {
  if constexpr (kStride != 0) {
    vector_passes<kStride>(c, off, W, [&](std::int64_t ow, int n, bool last) {
      const VF v = load_outputs<kStride>(row, ow * kStride + off, n, last), b = simd::load(best + ow);
      const VM take = (v > b) | simd::isnan(v);
      store_n(best + ow, simd::select(take, v, b), n);
      if constexpr (kIndices) {
        const VM here = static_cast<std::int32_t>(row_at + ow * kStride + off) + lane_offsets<kStride>();
        store_n(at + ow, take ? here : load_ints(at + ow), n);
      }
    });
  } else {
    for (std::int64_t ow = c.lo; ow < c.hi; ++ow) {
      const float v = row[ow * sw + off];
      const bool take = v > best[ow] || v != v;
      best[ow] = take ? v : best[ow];
      if constexpr (kIndices) at[ow] = take ? static_cast<std::int32_t>(row_at + ow * sw + off) : at[ow];
    }
  }
}

template <int kStride, bool kIndices>
[[gnu::flatten]] void max_rows(const PoolGeometry& g, const float* x, float* y, std::int64_t* indices,
                               std::int64_t begin, std::int64_t end) {
  const std::int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  // kLanes spare elements: a last vector of the row loads a whole one (vector_passes).
  std::vector<float> best(static_cast<std::size_t>(OW + kLanes));
  std::vector<std::int32_t> at(static_cast<std::size_t>(OW + kLanes));
  for (std::int64_t r = begin; r < end; ++r) {
    const std::int64_t p = r / OH, oh = r % OH;
    const float* plane = x + p * g.in_plane();
    std::fill_n(best.begin(), OW, -std::numeric_limits<float>::infinity());
    if constexpr (kIndices) {
      const std::int64_t first_row = g.first_inside(0, oh) * W;
      for (std::int64_t ow = 0; ow < OW; ++ow) at[ow] = static_cast<std::int32_t>(first_row + g.first_inside(1, ow));
    }
    for (std::int64_t kh = 0; kh < g.kernel[0]; ++kh) {
      const std::int64_t ih = g.start(0, oh) + kh * g.dilation[0];
      if (ih < 0 || ih >= H) continue;
      for (std::int64_t kw = 0; kw < g.kernel[1]; ++kw) {
        const std::int64_t off = kw * g.dilation[1] - g.padding[1];
        max_pass<kStride, kIndices>(plane + ih * W, ih * W, off, g.stride[1], covered(off, g.stride[1], W, OW), W,
                                    best.data(), at.data());
      }
    }
    std::copy_n(best.begin(), OW, y + r * OW);
    if constexpr (kIndices) std::copy_n(at.begin(), OW, indices + r * OW);
  }
}

// Runs fn.template operator()<kStride>() with the row pass the stride allows.
template <class Fn>
void by_stride(std::int64_t stride, const Fn& fn) {
  if (stride == 1)
    fn.template operator()<1>();
  else if (stride == 2)
    fn.template operator()<2>();
  else
    fn.template operator()<0>();
}

std::int64_t row_grain(const PoolGeometry& g) {
  return std::max<std::int64_t>(1, kDefaultGrain / std::max<std::int64_t>(1, g.out[1] * g.kernel[0] * g.kernel[1]));
}

void max_pool_kernel(const OpIr& op, const KernelArgs& a) {
  const TensorIr& x = op.inputs[0];
  KILN_CHECK(x.dtype == DType::f32, "max_pool",
             "dtype " + std::string(dtype_name(x.dtype)) + " is not supported on the CPU");
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = pool_geometry(op);
  // Positions run in 32-bit lanes: a plane of 2^31 elements (8 GiB) is far beyond any pooling.
  KILN_CHECK(g.in_plane() < (std::int64_t{1} << 31), "max_pool",
             "planes of 2^31 elements or more are not supported on the CPU (input " + describe(x) + ")");
  const float* in = in_ptr<float>(a, 0);
  float* y = out_ptr<float>(a, 0);
  std::int64_t* indices = op.outputs.size() > 1 ? out_ptr<std::int64_t>(a, 1) : nullptr;
  by_stride(g.stride[1], [&]<int kStride>() {
    parallel_for(g.planes * g.out[0], row_grain(g), [&](std::int64_t b, std::int64_t e) {
      if (indices)
        max_rows<kStride, true>(g, in, y, indices, b, e);
      else
        max_rows<kStride, false>(g, in, y, nullptr, b, e);
    });
  });
}

// ---- avg_pool ----

template <int kStride>
KILN_POOL_INLINE void sum_pass(const float* row, std::int64_t off, std::int64_t sw, Covered c, std::int64_t W,
                               float* sum) {
  if constexpr (kStride != 0) {
    vector_passes<kStride>(c, off, W, [&](std::int64_t ow, int n, bool last) {
      store_n(sum + ow, simd::load(sum + ow) + load_outputs<kStride>(row, ow * kStride + off, n, last), n);
    });
  } else {
    for (std::int64_t ow = c.lo; ow < c.hi; ++ow) sum[ow] += row[ow * sw + off];
  }
}

template <int kStride>
[[gnu::flatten]] void avg_rows(const PoolGeometry& g, const float* x, float* y, std::int64_t begin, std::int64_t end) {
  const std::int64_t W = g.in[1], OH = g.out[0], OW = g.out[1];
  std::vector<float> sum(static_cast<std::size_t>(OW + kLanes));  // spare: as max_rows
  for (std::int64_t r = begin; r < end; ++r) {
    const std::int64_t p = r / OH, oh = r % OH;
    const float* plane = x + p * g.in_plane();
    const PoolGeometry::AvgSpan h = g.avg_span(0, oh);
    std::fill_n(sum.begin(), OW, 0.0f);
    for (std::int64_t ih = h.lo; ih < h.hi; ++ih)
      for (std::int64_t kw = 0; kw < g.kernel[1]; ++kw) {
        const std::int64_t off = kw - g.padding[1];
        sum_pass<kStride>(plane + ih * W, off, g.stride[1], covered(off, g.stride[1], W, OW), W, sum.data());
      }
    float* out = y + r * OW;
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      const std::int64_t divisor = g.avg_divisor(h, g.avg_span(1, ow));
      out[ow] = divisor == 0 ? 0.0f : sum[ow] / static_cast<float>(divisor);
    }
  }
}

void avg_pool_kernel(const OpIr& op, const KernelArgs& a) {
  const TensorIr& x = op.inputs[0];
  KILN_CHECK(x.dtype == DType::f32, "avg_pool",
             "dtype " + std::string(dtype_name(x.dtype)) + " is not supported on the CPU");
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = pool_geometry(op);
  const float* in = in_ptr<float>(a, 0);
  float* y = out_ptr<float>(a, 0);
  by_stride(g.stride[1], [&]<int kStride>() {
    parallel_for(g.planes * g.out[0], row_grain(g),
                 [&](std::int64_t b, std::int64_t e) { avg_rows<kStride>(g, in, y, b, e); });
  });
}

// ---- gradients ----

// fn(plane) for every plane, each task owning whole planes of dx, zeroed first.
template <class Fn>
void for_each_plane(const PoolGeometry& g, float* dx, const Fn& fn) {
  const std::int64_t work = std::max<std::int64_t>(1, g.in_plane() + g.out_plane() * g.kernel[0] * g.kernel[1]);
  parallel_for(g.planes, std::max<std::int64_t>(1, kDefaultGrain / work), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      std::fill_n(dx + p * g.in_plane(), g.in_plane(), 0.0f);
      fn(p);
    }
  });
}

void check_f32(const OpIr& op) {
  KILN_CHECK(op.inputs[0].dtype == DType::f32, op_name(op.kind),
             "dtype " + std::string(dtype_name(op.inputs[0].dtype)) + " is not supported on the CPU");
}

// An index outside the plane (none that max_pool gives) adds nowhere, as on Vulkan.
void max_pool_grad_kernel(const OpIr& op, const KernelArgs& a) {
  check_f32(op);
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = pool_geometry(op);
  const float* dy = in_ptr<float>(a, 0);
  const std::int64_t* indices = in_ptr<std::int64_t>(a, 1);
  float* dx = out_ptr<float>(a, 0);
  const std::int64_t n = g.in_plane(), m = g.out_plane();
  for_each_plane(g, dx, [&](std::int64_t p) {
    float* plane = dx + p * n;
    for (std::int64_t o = p * m; o < (p + 1) * m; ++o)
      if (const std::int64_t i = indices[o]; i >= 0 && i < n) plane[i] += dy[o];
  });
}

void avg_pool_grad_kernel(const OpIr& op, const KernelArgs& a) {
  check_f32(op);
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = pool_geometry(op);
  const float* dy = in_ptr<float>(a, 0);
  float* dx = out_ptr<float>(a, 0);
  const std::int64_t W = g.in[1], OH = g.out[0], OW = g.out[1];
  for_each_plane(g, dx, [&](std::int64_t p) {
    float* plane = dx + p * g.in_plane();
    const float* grad = dy + p * g.out_plane();
    for (std::int64_t oh = 0; oh < OH; ++oh) {
      const PoolGeometry::AvgSpan h = g.avg_span(0, oh);
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const PoolGeometry::AvgSpan w = g.avg_span(1, ow);
        const std::int64_t divisor = g.avg_divisor(h, w);
        if (divisor == 0) continue;
        const float share = grad[oh * OW + ow] / static_cast<float>(divisor);
        for (std::int64_t ih = h.lo; ih < h.hi; ++ih)
          for (std::int64_t iw = w.lo; iw < w.hi; ++iw) plane[ih * W + iw] += share;
      }
    }
  });
}

#undef KILN_POOL_INLINE

}  // namespace pool

void register_pool_kernels(KernelTable& t) {
#define KILN_POOL_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::cpu
