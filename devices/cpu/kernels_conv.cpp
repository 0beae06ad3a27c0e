// CPU kernels of the sliding-window ops unfold and fold. Both see every op as 3 spatial dims
// (missing leading dims have size 1) and work on rows: unfold writes one output row per
// (n, c, kernel offset), made of segments that are rows of the input shifted by the offset
// (contiguous copies when the stride along the last dim is 1) with the pad value where the
// window hangs over the border; fold owns whole rows of the image, so tasks never share an
// output element, and adds into each element the columns that cover it in kernel-offset order:
// the same order for every thread count, and the one the Vulkan kernel uses.
#include <algorithm>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kiln/devices/cpu/conv_gemm.h"
#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/devices/shape_plans.h"

namespace kiln::cpu {
namespace {

using Geometry = WindowGeometry;
Geometry geometry(const OpIr& op, const Shape& image_shape) { return window_geometry(op, image_shape); }

// Window positions o in [0, out) whose element o * stride + offset lies in [0, size).
struct Span {
  std::int64_t lo, hi;
};
Span inside(std::int64_t offset, std::int64_t stride, std::int64_t size, std::int64_t out) {
  const std::int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const std::int64_t hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  return {std::min(lo, out), std::clamp(hi, std::min(lo, out), out)};
}

// The stored bits of the pad value in an element of the op's dtype, by its size: bool, f32 or i64.
template <class Raw>
Raw pad_bits(double value) {
  if constexpr (sizeof(Raw) == 1) {
    return value != 0.0 ? 1 : 0;  // bool
  } else if constexpr (sizeof(Raw) == 4) {
    const float f = static_cast<float>(value);
    Raw bits;
    std::memcpy(&bits, &f, sizeof f);
    return bits;
  } else {
    const auto i = static_cast<std::int64_t>(value);  // the shape rule checked the range
    return static_cast<Raw>(i);
  }
}

// One depth slice of one output row: dst[oh * out_w + ow] = slice[oh * sh + h0][ow * sw + w0], or
// the pad value where that is outside the image slice.
template <class Raw>
void unfold_slice(const Geometry& g, const Raw* slice, Raw* dst, std::int64_t h0, std::int64_t w0, Raw pad) {
  const std::int64_t H = g.image[1], W = g.image[2], out_h = g.out[1], out_w = g.out[2];
  const std::int64_t sh = g.stride[1], sw = g.stride[2];
  const Span rows = inside(h0, sh, H, out_h), cols = inside(w0, sw, W, out_w);
  std::fill_n(dst, rows.lo * out_w, pad);
  std::fill_n(dst + rows.hi * out_w, (out_h - rows.hi) * out_w, pad);
  if (sh == 1 && sw == 1 && out_w == W) {
    // "Same" windows (conv2d's 3x3, pad 1): the output rows follow each other as the image rows
    // do, so one copy from the first valid element to the last moves them all; the columns it
    // took from a neighbouring row then get the pad value back.
    if (rows.lo < rows.hi && cols.lo < cols.hi) {
      const std::int64_t first = rows.lo * W + cols.lo, last = (rows.hi - 1) * W + cols.hi;
      std::memcpy(dst + first, slice + first + h0 * W + w0, static_cast<std::size_t>(last - first) * sizeof(Raw));
    }
    for (std::int64_t oh = rows.lo; oh < rows.hi; ++oh) {
      std::fill_n(dst + oh * W, cols.lo, pad);
      std::fill_n(dst + oh * W + cols.hi, W - cols.hi, pad);
    }
    return;
  }
  for (std::int64_t oh = rows.lo; oh < rows.hi; ++oh) {
    Raw* seg = dst + oh * out_w;
    const Raw* from = slice + (oh * sh + h0) * W + w0 + cols.lo * sw;  // image element of seg[cols.lo]
    std::fill_n(seg, cols.lo, pad);
    if (sw == 1) {
      std::memcpy(seg + cols.lo, from, static_cast<std::size_t>(cols.hi - cols.lo) * sizeof(Raw));
    } else {
      for (std::int64_t ow = cols.lo; ow < cols.hi; ++ow) seg[ow] = from[(ow - cols.lo) * sw];
    }
    std::fill_n(seg + cols.hi, out_w - cols.hi, pad);
  }
}

// Outputs past kStreamBytes (conv2d's [8, 576, 3136] columns: 58 MB) are far larger than the
// caches, so nothing gains from their lines being read in before they are written: each slice
// is built in a small buffer and streamed out with non-temporal stores (about 20% faster, and
// their reader gains nothing either way). Smaller outputs stay in the cache for their consumer.
constexpr std::int64_t kStreamBytes = std::int64_t{16} << 20;
constexpr std::size_t kStageBytes = 64 << 10;

// memcpy with non-temporal stores for the 32-byte-aligned body; the caller fences (sfence)
// before its writes are read elsewhere.
void stream_copy(std::byte* dst, const std::byte* src, std::size_t n) {
#if defined(__AVX__)
  const std::size_t head = std::min(n, (32 - reinterpret_cast<std::uintptr_t>(dst) % 32) % 32);
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + 32 <= n; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

// Unfold's elements move as raw words of their size: one instance per element size. Output row
// r = (n, c, kernel offset) holds, for every window, the image element at that offset.
template <class Raw>
void unfold_rows(const Geometry& g, const Raw* x, Raw* y, Raw pad) {
  const std::int64_t K = g.volume(), L = g.windows(), slice_size = g.image[1] * g.image[2];
  const std::int64_t slice_out = g.out[1] * g.out[2];
  const std::int64_t rows = g.batch_channels * K;
  const bool stream =
      rows * L * static_cast<std::int64_t>(sizeof(Raw)) >= kStreamBytes && slice_out * sizeof(Raw) <= kStageBytes;
  parallel_for(rows, std::max<std::int64_t>(1, kDefaultGrain / L), [&](std::int64_t b, std::int64_t e) {
    alignas(64) Raw stage[kStageBytes / sizeof(Raw)];  // uninitialized: only used when streaming
    for (std::int64_t r = b; r < e; ++r) {
      const std::int64_t nc = r / K, k = r % K;
      const std::int64_t kd = k / (g.kernel[1] * g.kernel[2]), kh = k / g.kernel[2] % g.kernel[1];
      const std::int64_t kw = k % g.kernel[2];
      const std::int64_t d0 = kd * g.dilation[0] - g.padding[0];
      const std::int64_t h0 = kh * g.dilation[1] - g.padding[1], w0 = kw * g.dilation[2] - g.padding[2];
      const Raw* image = x + nc * g.plane();
      Raw* dst = y + r * L;
      for (std::int64_t od = 0; od < g.out[0]; ++od, dst += slice_out) {
        const std::int64_t id = od * g.stride[0] + d0;
        if (id < 0 || id >= g.image[0]) {
          std::fill_n(dst, slice_out, pad);
        } else if (!stream) {
          unfold_slice(g, image + id * slice_size, dst, h0, w0, pad);
        } else {
          unfold_slice(g, image + id * slice_size, stage, h0, w0, pad);
          stream_copy(reinterpret_cast<std::byte*>(dst), reinterpret_cast<const std::byte*>(stage),
                      static_cast<std::size_t>(slice_out) * sizeof(Raw));
        }
      }
    }
#if defined(__SSE2__)
    if (stream) _mm_sfence();  // streamed stores are weakly ordered: complete them before the task ends
#endif
  });
}

void unfold_kernel(const OpIr& op, const KernelArgs& a) {
  const TensorIr &x = op.inputs[0], &y = op.outputs[0];
  if (y.numel() == 0) return;
  const Geometry g = geometry(op, x.shape);
  // Without padding the value is never written, and the shape rule let any value through.
  const bool padded = g.padding[0] > 0 || g.padding[1] > 0 || g.padding[2] > 0;
  const double v = padded ? g.pad_value : 0.0;
  const auto run = [&](auto raw) {
    using Raw = decltype(raw);
    unfold_rows(g, in_ptr<Raw>(a, 0), out_ptr<Raw>(a, 0), pad_bits<Raw>(v));
  };
  switch (dtype_size(x.dtype)) {
    case 1: return run(std::uint8_t{});
    case 4: return run(std::uint32_t{});
    case 8: return run(std::uint64_t{});
    default: throw Error("unfold", std::string("dtype ") + dtype_name(x.dtype) + " is not supported on the CPU");
  }
}

// Along dim d, the window whose kernel offset k lands on image position i: o with
// o * stride + k * dilation - padding == i, or -1 when there is none.
std::int64_t window_of(const Geometry& g, int d, std::int64_t i, std::int64_t k) {
  const std::int64_t t = i + g.padding[d] - k * g.dilation[d];
  if (t < 0 || t % g.stride[d] != 0 || t / g.stride[d] >= g.out[d]) return -1;
  return t / g.stride[d];
}

// Image row r = (nc, id, ih) of fold's output: zeroed, then for every kernel offset in order the
// one column segment (if any) whose windows cover the row added in.
void fold_row(const Geometry& g, const float* cols, float* out, std::int64_t r) {
  const std::int64_t K = g.volume(), L = g.windows(), W = g.image[2], out_w = g.out[2], sw = g.stride[2];
  const std::int64_t ih = r % g.image[1], id = r / g.image[1] % g.image[0], nc = r / (g.image[0] * g.image[1]);
  float* row = out + r * W;
  std::fill_n(row, W, 0.0f);
  for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const std::int64_t od = window_of(g, 0, id, kd);
    if (od < 0) continue;
    for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const std::int64_t oh = window_of(g, 1, ih, kh);
      if (oh < 0) continue;
      for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const std::int64_t k = (kd * g.kernel[1] + kh) * g.kernel[2] + kw;
        const float* seg = cols + (nc * K + k) * L + (od * g.out[1] + oh) * out_w;
        const std::int64_t w0 = kw * g.dilation[2] - g.padding[2];
        const Span s = inside(w0, sw, W, out_w);
        // row[ow * sw + w0] += seg[ow] for ow in s
        float* at = row + w0 + s.lo * sw;
        const float* from = seg + s.lo;
        const std::int64_t n = s.hi - s.lo;
        if (sw == 1) {
          for (std::int64_t i = 0; i < n; ++i) at[i] += from[i];
        } else {
          for (std::int64_t i = 0; i < n; ++i) at[i * sw] += from[i];
        }
      }
    }
  }
}

// Each task owns whole image rows, so no two tasks add into one element.
void fold_kernel(const OpIr& op, const KernelArgs& a) {
  const TensorIr &cols = op.inputs[0], &y = op.outputs[0];
  if (y.numel() == 0) return;
  KILN_CHECK(cols.dtype == DType::f32, "fold",
             std::string("dtype ") + dtype_name(cols.dtype) + " is not supported on the CPU");
  const Geometry g = geometry(op, y.shape);
  const float* c = in_ptr<float>(a, 0);
  float* out = out_ptr<float>(a, 0);
  const std::int64_t row_work = std::max<std::int64_t>(1, g.image[2] * g.volume());
  parallel_for(g.batch_channels * g.image[0] * g.image[1], std::max<std::int64_t>(1, kDefaultGrain / row_work),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t r = b; r < e; ++r) fold_row(g, c, out, r);
               });
}

}  // namespace

void register_conv_kernels(KernelTable& t) {
  t.set(OpKind::unfold, unfold_kernel);
  t.set(OpKind::fold, fold_kernel);
  t.set(OpKind::conv, conv_kernel);  // devices/cpu/conv_gemm.h
  t.set(OpKind::conv_input_grad, conv_input_grad_kernel);
  t.set(OpKind::conv_weight_grad, conv_weight_grad_kernel);
}

}  // namespace kiln::cpu
