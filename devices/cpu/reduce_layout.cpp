#include "kiln/devices/cpu/reduce_layout.h"

#include "kiln/devices/shape_plans.h"

namespace kiln::cpu {

ReduceLayout plan_reduce_layout(const Shape& shape, const std::vector<std::int64_t>& dims) {
  const std::vector<ReduceRun> segs = reduce_runs(shape, dims);
  ReduceLayout l;
  int reduced_runs = 0;
  for (const ReduceRun& s : segs) reduced_runs += s.reduced;
  ReduceGeometry& g = l.geometry;
  if (reduced_runs == 0) {
    // Nothing to fold: one pass over all elements, vectorized along inner.
    g = {1, 1, shape.numel()};
  } else if (reduced_runs == 1) {
    bool after = false;
    g = {1, 1, 1};
    for (const ReduceRun& s : segs) {
      if (s.reduced)
        g.extent = s.size, after = true;
      else if (after)
        g.inner *= s.size;
      else
        g.outer *= s.size;
    }
  } else {
    l.needs_gather = true;
    l.split = segs.size() == 3 && segs[0].reduced && segs[2].reduced;
    g = {1, 1, 1};
    for (const ReduceRun& s : segs) {
      if (s.reduced) {
        g.extent *= s.size;
        l.reduced.push_back({s.size, s.stride});
      } else {
        g.outer *= s.size;
        l.kept.push_back({s.size, s.stride});
      }
    }
  }
  return l;
}

ReduceGeometry geometry_along_dim(const Shape& s, int d) {
  if (s.rank() == 0) return {1, 1, 1};
  ReduceGeometry g{1, s[d], 1};
  for (int i = 0; i < d; ++i) g.outer *= s[i];
  for (int i = d + 1; i < s.rank(); ++i) g.inner *= s[i];
  return g;
}

template <class T>
void gather_reduced_last(const T* x, T* y, const ReduceLayout& l) {
  const std::int64_t extent = l.geometry.extent;
  if (extent == 0) return;
  const int nk = static_cast<int>(l.kept.size()), nr = static_cast<int>(l.reduced.size());
  const ReduceLayout::Run last = l.reduced.back();
  const std::int64_t rows_per_row = extent / last.size;  // runs of `last` per output row
  parallel_for(l.geometry.outer, detail::grain_for(extent), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t q = b; q < e; ++q) {
      std::int64_t base = 0, rest = q;
      for (int i = nk - 1; i >= 0; --i) {
        base += (rest % l.kept[i].size) * l.kept[i].stride;
        rest /= l.kept[i].size;
      }
      T* out = y + q * extent;
      for (std::int64_t p = 0; p < rows_per_row; ++p) {
        std::int64_t off = base, r = p;
        for (int i = nr - 2; i >= 0; --i) {
          off += (r % l.reduced[i].size) * l.reduced[i].stride;
          r /= l.reduced[i].size;
        }
        for (std::int64_t j = 0; j < last.size; ++j) out[p * last.size + j] = x[off + j * last.stride];
      }
    }
  });
}

template void gather_reduced_last<float>(const float*, float*, const ReduceLayout&);
template void gather_reduced_last<std::int64_t>(const std::int64_t*, std::int64_t*, const ReduceLayout&);
template void gather_reduced_last<std::uint8_t>(const std::uint8_t*, std::uint8_t*, const ReduceLayout&);

}  // namespace kiln::cpu
