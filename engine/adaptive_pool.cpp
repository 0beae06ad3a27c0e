// Adaptive pooling: output position i of a dim of size `in` pools [floor(i in / out),
// ceil((i + 1) in / out)), torch's windows. When out divides in, those are the windows of plain
// pooling (kernel = stride = in / out), which runs instead. Otherwise the windows differ in
// start and size: average pooling sums them with 0/1 matrices (one matmul per dim) and divides
// by their sizes; max pooling gathers them (index_select per dim, short windows repeating their
// last element, which can never be chosen over the same element earlier in the window).
#include <algorithm>

#include "kiln/engine/creation.h"
#include "kiln/engine/elementwise.h"
#include "kiln/engine/index.h"
#include "kiln/engine/layout.h"
#include "kiln/engine/linalg.h"
#include "kiln/engine/pool.h"
#include "kiln/engine/reduce.h"
#include "kiln/engine/window_args.h"

namespace kiln {

namespace {

using detail::describe;

struct AdaptiveGeometry {
  Window in, out;
  std::vector<std::vector<std::int64_t>> start, end;  // per dim, per output position
  bool uniform = true;                                // every out divides its in
};

AdaptiveGeometry geometry(const char* op, const Tensor& x, const Tensor& xb, const Window& output_size, int dims) {
  AdaptiveGeometry g;
  g.out = detail::per_dim(op, "output_size", output_size, dims, 1);
  for (int d = 0; d < dims; ++d) {
    const std::int64_t in = xb.size(2 + d), out = g.out[d];
    KILN_CHECK(in > 0, op, "the input " + describe(x) + " has an empty spatial dim");
    g.in.push_back(in);
    g.uniform = g.uniform && in % out == 0;
    auto& s = g.start.emplace_back();
    auto& e = g.end.emplace_back();
    for (std::int64_t i = 0; i < out; ++i) {
      s.push_back(i * in / out);
      e.push_back(((i + 1) * in + out - 1) / out);
    }
  }
  return g;
}

PoolOptions uniform_pool(const AdaptiveGeometry& g) {
  PoolOptions o;
  for (std::size_t d = 0; d < g.in.size(); ++d) o.kernel.push_back(g.in[d] / g.out[d]);
  return o;
}

Tensor adaptive_avg_nd(const char* op, int dims, const Tensor& x, const Window& output_size) {
  const auto [xb, unbatched] = detail::batched_input(op, x, dims);
  const AdaptiveGeometry g = geometry(op, x, xb, output_size, dims);
  Tensor y;
  if (std::all_of(g.out.begin(), g.out.end(), [](std::int64_t v) { return v == 1; })) {
    std::vector<std::int64_t> spatial;
    for (int d = 0; d < dims; ++d) spatial.push_back(2 + d);
    y = mean(xb, spatial, /*keepdim=*/true);
  } else if (g.uniform) {
    y = dims == 1 ? avg_pool1d(xb, uniform_pool(g)) : avg_pool2d(xb, uniform_pool(g));
  } else {
    // Window sums: along the last dim x @ M^T ([in, out] 0/1), along the one before M @ x.
    y = xb;
    std::vector<float> counts{1.0f};
    for (int d = dims - 1; d >= 0; --d) {
      const bool last = d == dims - 1;
      const std::int64_t in = g.in[d], out = g.out[d];
      std::vector<float> m(static_cast<std::size_t>(in * out), 0.0f);
      for (std::int64_t i = 0; i < out; ++i)
        for (std::int64_t j = g.start[d][i]; j < g.end[d][i]; ++j)
          m[static_cast<std::size_t>(last ? j * out + i : i * in + j)] = 1.0f;
      Tensor sums = detail::constant(std::move(m), last ? Shape{in, out} : Shape{out, in}, x.dtype(), x.device());
      y = last ? matmul(std::move(y), std::move(sums)) : matmul(std::move(sums), std::move(y));
    }
    for (int d = 0; d < dims; ++d) {
      std::vector<float> next;
      for (float before : counts)
        for (std::int64_t i = 0; i < g.out[d]; ++i)
          next.push_back(before * static_cast<float>(g.end[d][i] - g.start[d][i]));
      counts = std::move(next);
    }
    // Divided in f32, rounded once to the input's dtype.
    y = div(std::move(y), from_vector(std::move(counts), Shape(g.out), x.device()));
    if (y.dtype() != x.dtype()) y = cast(std::move(y), x.dtype());
  }
  return detail::unbatched_result(std::move(y), unbatched);
}

PoolResult adaptive_max_nd(const char* op, int dims, const Tensor& x, const Window& output_size, bool with_indices) {
  const auto [xb, unbatched] = detail::batched_input(op, x, dims);
  const AdaptiveGeometry g = geometry(op, x, xb, output_size, dims);
  PoolResult r;
  if (g.uniform) {
    const PoolOptions o = uniform_pool(g);
    if (with_indices)
      r = dims == 1 ? max_pool1d_with_indices(xb, o) : max_pool2d_with_indices(xb, o);
    else
      r.values = dims == 1 ? max_pool1d(xb, o) : max_pool2d(xb, o);
  } else {
    // Gather each dim's windows: [.., S_d, ..] -> [.., out_d, k_d, ..], k_d the longest window.
    detail::WindowCoords coords{{}, {}, g.out, g.in};
    Tensor w = xb;
    std::vector<std::int64_t> perm{0, 1};
    for (int d = 0; d < dims; ++d) {
      std::int64_t k = 0;
      for (std::int64_t i = 0; i < g.out[d]; ++i) k = std::max(k, g.end[d][i] - g.start[d][i]);
      auto& along = coords.along.emplace_back();
      for (std::int64_t i = 0; i < g.out[d]; ++i)
        for (std::int64_t a = 0; a < k; ++a) along.push_back(std::min(g.start[d][i] + a, g.end[d][i] - 1));
      coords.kernel.push_back(k);
      const int at = 2 + 2 * d;  // the dims before d are each split in two already
      std::vector<std::int64_t> split = w.shape().to_vector();
      split[at] = g.out[d];
      split.insert(split.begin() + at + 1, k);
      w = reshape(index_select(std::move(w), at, from_vector(along, Shape{g.out[d] * k}, x.device())), split);
    }
    // [N, C, o0, k0, o1, k1] -> [N, C, k0, k1, o0, o1] -> [N, C, kk, L]
    for (int d = 0; d < dims; ++d) perm.push_back(3 + 2 * d);
    for (int d = 0; d < dims; ++d) perm.push_back(2 + 2 * d);
    std::int64_t kk = 1, count = 1;
    for (int d = 0; d < dims; ++d) {
      kk *= coords.kernel[d];
      count *= g.out[d];
    }
    w = reshape(permute(std::move(w), perm), {xb.size(0), xb.size(1), kk, count});
    r = detail::max_of_windows(std::move(w), coords, with_indices);
  }
  r.values = detail::unbatched_result(std::move(r.values), unbatched);
  if (with_indices) r.indices = detail::unbatched_result(std::move(r.indices), unbatched);
  return r;
}

}  // namespace

Tensor adaptive_avg_pool1d(Tensor x, const Window& output_size) {
  return adaptive_avg_nd("adaptive_avg_pool1d", 1, x, output_size);
}
Tensor adaptive_avg_pool2d(Tensor x, const Window& output_size) {
  return adaptive_avg_nd("adaptive_avg_pool2d", 2, x, output_size);
}
Tensor adaptive_max_pool1d(Tensor x, const Window& output_size) {
  return adaptive_max_nd("adaptive_max_pool1d", 1, x, output_size, false).values;
}
Tensor adaptive_max_pool2d(Tensor x, const Window& output_size) {
  return adaptive_max_nd("adaptive_max_pool2d", 2, x, output_size, false).values;
}
PoolResult adaptive_max_pool1d_with_indices(Tensor x, const Window& output_size) {
  return adaptive_max_nd("adaptive_max_pool1d", 1, x, output_size, true);
}
PoolResult adaptive_max_pool2d_with_indices(Tensor x, const Window& output_size) {
  return adaptive_max_nd("adaptive_max_pool2d", 2, x, output_size, true);
}

}  // namespace kiln
