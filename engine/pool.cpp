// Max and average pooling over the windows of unfold: [N, C, *spatial] -> [N, C * kk, L] seen as
// [N, C, kk, L], then a max or a sum over the kernel offsets. Output sizes, ceil_mode and the
// average's divisors follow torch's pooling_output_shape and avg_pool2d kernels.
#include "kiln/engine/pool.h"

#include <limits>

#include "kiln/engine/creation.h"
#include "kiln/engine/elementwise.h"
#include "kiln/engine/layout.h"
#include "kiln/engine/reduce.h"
#include "kiln/engine/window_args.h"

namespace kiln {

namespace {

using detail::describe;
using detail::ints_str;

struct PoolGeometry {
  Window kernel, stride, padding, dilation, in, out;
  Window extra;  // padding beyond `padding` at the end of each dim, for ceil_mode's last window
};

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

PoolGeometry geometry(const char* op, const Tensor& x, const Tensor& xb, int dims, const PoolOptions& o, bool dilated) {
  PoolGeometry g;
  g.kernel = detail::per_dim(op, "kernel", o.kernel, dims, 1);
  g.stride = o.stride.empty() ? g.kernel : detail::per_dim(op, "stride", o.stride, dims, 1);
  g.padding = detail::per_dim(op, "padding", o.padding, dims, 0);
  g.dilation = detail::per_dim(op, "dilation", o.dilation, dims, 1);
  for (int d = 0; d < dims; ++d) {
    KILN_CHECK(dilated || g.dilation[d] == 1, op, "average pooling takes no dilation, got " + ints_str(o.dilation));
    KILN_CHECK(2 * g.padding[d] <= g.kernel[d], op,
               "padding " + ints_str(o.padding) + " must be at most half the kernel " + ints_str(o.kernel));
    const std::int64_t in = xb.size(2 + d), span = g.dilation[d] * (g.kernel[d] - 1) + 1;
    std::int64_t out = floor_div(in + 2 * g.padding[d] - span + (o.ceil_mode ? g.stride[d] - 1 : 0), g.stride[d]) + 1;
    // torch: the last window must start inside the input or the left padding.
    if (o.ceil_mode && (out - 1) * g.stride[d] >= in + g.padding[d]) --out;
    g.in.push_back(in);
    g.out.push_back(out);
    g.extra.push_back(std::max<std::int64_t>(0, (out - 1) * g.stride[d] + span - (in + 2 * g.padding[d])));
  }
  for (std::int64_t v : g.out)
    KILN_CHECK(v >= 1, op,
               "the output would be " + ints_str(g.out) + " for input " + describe(x) + " (kernel " +
                   ints_str(g.kernel) + ", stride " + ints_str(g.stride) + ", padding " + ints_str(g.padding) +
                   ", dilation " + ints_str(g.dilation) + "): too small");
  return g;
}

// [N, C, kk, L]: every window of xb, padded with pad_value.
Tensor windows(Tensor xb, const PoolGeometry& g, double pad_value) {
  const std::int64_t n = xb.size(0), c = xb.size(1);
  std::vector<std::int64_t> tail;  // pad()'s (before, after) pairs, from the last dim
  bool any_extra = false;
  for (auto d = static_cast<int>(g.extra.size()) - 1; d >= 0; --d) {
    tail.push_back(0);
    tail.push_back(g.extra[d]);
    any_extra = any_extra || g.extra[d] > 0;
  }
  if (any_extra) xb = pad(std::move(xb), tail, pad_value);
  Tensor cols = unfold(std::move(xb), g.kernel, g.dilation, g.padding, g.stride, pad_value);
  std::int64_t kk = 1, count = 1;
  for (std::size_t d = 0; d < g.kernel.size(); ++d) {
    kk *= g.kernel[d];
    count *= g.out[d];
  }
  return reshape(std::move(cols), {n, c, kk, count});
}

PoolResult max_pool_nd(const char* op, int dims, const Tensor& x, const PoolOptions& o, bool with_indices) {
  const auto [xb, unbatched] = detail::batched_input(op, x, dims);
  const PoolGeometry g = geometry(op, x, xb, dims, o, /*dilated=*/true);
  detail::WindowCoords coords{{}, g.kernel, g.out, g.in};
  for (int d = 0; d < dims; ++d) {
    auto& along = coords.along.emplace_back();
    for (std::int64_t i = 0; i < g.out[d]; ++i) {
      const std::int64_t start = i * g.stride[d] - g.padding[d];
      // A padding offset wins only when the whole window is -inf; torch then names the first
      // element inside the input, so that is where padding offsets point.
      std::int64_t first = start;
      while (first < 0) first += g.dilation[d];
      for (std::int64_t a = 0; a < g.kernel[d]; ++a) {
        const std::int64_t at = start + a * g.dilation[d];
        along.push_back(at >= 0 && at < g.in[d] ? at : std::min(first, g.in[d] - 1));
      }
    }
  }
  PoolResult r = detail::max_of_windows(windows(xb, g, -std::numeric_limits<double>::infinity()), coords, with_indices);
  r.values = detail::unbatched_result(std::move(r.values), unbatched);
  if (with_indices) r.indices = detail::unbatched_result(std::move(r.indices), unbatched);
  return r;
}

Tensor avg_pool_nd(const char* op, int dims, const Tensor& x, const PoolOptions& o) {
  const auto [xb, unbatched] = detail::batched_input(op, x, dims);
  const PoolGeometry g = geometry(op, x, xb, dims, o, /*dilated=*/false);
  const std::int64_t n = xb.size(0), c = xb.size(1);
  // torch's divisor per window: its size clipped to the padded input (count_include_pad), or
  // the number of its elements inside the input; a product over the dims.
  std::vector<float> divisors{1.0f};
  for (int d = 0; d < dims; ++d) {
    std::vector<float> next;
    for (float before : divisors)
      for (std::int64_t i = 0; i < g.out[d]; ++i) {
        const std::int64_t start = i * g.stride[d] - g.padding[d];
        const std::int64_t end = std::min(start + g.kernel[d], g.in[d] + g.padding[d]);
        const std::int64_t inside = std::min(end, g.in[d]) - std::max<std::int64_t>(start, 0);
        next.push_back(before * static_cast<float>(o.count_include_pad ? end - start : inside));
      }
    divisors = std::move(next);
  }
  const Shape divisor_shape{static_cast<std::int64_t>(divisors.size())};
  Tensor sums = sum(windows(xb, g, 0.0), {2});
  // Divided in f32 (a 16-bit input's sum is widened), rounded once to the input's dtype.
  Tensor y = div(std::move(sums), from_vector(std::move(divisors), divisor_shape, x.device()));
  if (y.dtype() != x.dtype()) y = cast(std::move(y), x.dtype());
  return detail::unbatched_result(detail::to_spatial(std::move(y), n, c, g.out), unbatched);
}

}  // namespace

Tensor max_pool1d(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool1d", 1, x, o, false).values; }
Tensor max_pool2d(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool2d", 2, x, o, false).values; }
PoolResult max_pool1d_with_indices(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool1d", 1, x, o, true); }
PoolResult max_pool2d_with_indices(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool2d", 2, x, o, true); }
Tensor avg_pool1d(Tensor x, const PoolOptions& o) { return avg_pool_nd("avg_pool1d", 1, x, o); }
Tensor avg_pool2d(Tensor x, const PoolOptions& o) { return avg_pool_nd("avg_pool2d", 2, x, o); }

}  // namespace kiln
