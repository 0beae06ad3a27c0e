// The two loops every CPU reduction runs on, over the canonical view [outer, extent, inner]
// (out[o, i] = reduce over r of in[o, r, i]):
//   reduce_rows — inner == 1: each output reduces one contiguous row, in many independent lanes;
//   reduce_cols — inner > 1: each output row accumulates rows of the inner dim, vectorized over i.
// An op is three small pieces the loops are templates over (so they inline, no per-element call):
//   Prologue  maps input elements to the values reduced, tile by tile (identity, exp(x - c), ...);
//             it may read a per-output operand `c` (the centre of var, the max of logsumexp).
//   Reducer   identity / step / merge over an accumulator type.
//   Epilogue  maps an accumulator and its output index to the stored value (mean divides, ...).
// Fusion plugs elementwise prologues and epilogues into the same slots.
//
// Determinism: a row is cut into fixed blocks of kRowBlock elements (cols: kColBlock rows),
// each reduced alone; partials merge in block order. Only the shape decides the arithmetic,
// never the number of threads or which task ran first.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/devices/cpu/elementwise_math.h"
#include "kiln/devices/cpu/parallel.h"

namespace kiln::cpu {

struct ReduceGeometry {
  std::int64_t outer = 1, extent = 1, inner = 1;
  std::int64_t outputs() const { return outer * inner; }
};

inline constexpr std::int64_t kRowBlock = 16384;  // elements of a row per partial result
inline constexpr std::int64_t kColBlock = 512;    // rows of the reduced extent per partial result

// Independent accumulators per row: four 512-bit registers' worth, so that the adds of one
// chain do not wait on each other.
template <class Acc>
inline constexpr int kLanes = static_cast<int>(256 / sizeof(Acc));

// The prologue that reads the input as it is.
template <class T>
struct PlainInput {
  using In = T;
  using Value = T;
  static constexpr bool kStaged = false;
};

// A prologue with kStaged = true provides
//   void operator()(const In* x, std::int64_t at, Value* y, std::int64_t n, std::int64_t k,
//                   std::int64_t k_stride) const
// writing y[i] from input element at + i (of the canonical view x), for the output index
// k + i * k_stride (rows: stride 0, cols: stride 1). A fused prologue computes its values from
// `at` alone and never reads x (which is then null).

namespace detail {

// lanes[l] = merge(lanes[l], lanes[l + W]) for l < W, then W / 2, ..., 1: the fixed tree. W is a
// constant so that the wide levels vectorize (with a loop bound known only at run time, GCC
// merged all 63 float lanes one by one: a third of a softmax row's max pass).
template <int W, class R>
void merge_lanes(const R& r, typename R::Acc* lanes) {
  if constexpr (W >= 1) {
    for (int l = 0; l < W; ++l) lanes[l] = r.merge(lanes[l], lanes[l + W]);
    merge_lanes<W / 2>(r, lanes);
  }
}

// One contiguous run of a row, reduced in kLanes<Acc> lanes merged by a fixed tree.
// Elements [at, at + n) of x.
template <class R, class P>
typename R::Acc reduce_run(const R& r, const P& p, const typename P::In* x, std::int64_t at, std::int64_t n,
                           std::int64_t k) {
  using Acc = typename R::Acc;
  using V = typename P::Value;
  constexpr int L = kLanes<Acc>;
  static_assert(kTile % L == 0);
  if (n < L) {  // one accumulator, in order; the same for a staged prologue (fused or not)
    Acc acc = r.identity();
    if constexpr (P::kStaged) {
      alignas(64) V buf[L];
      p(x, at, buf, n, k, 0);
      for (std::int64_t i = 0; i < n; ++i) acc = r.step(acc, buf[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) acc = r.step(acc, x[at + i]);
    }
    return acc;
  }
  Acc lanes[L];
  for (int l = 0; l < L; ++l) lanes[l] = r.identity();
  auto body = [&](const V* v, std::int64_t m) {
    std::int64_t i = 0;
    for (; i + L <= m; i += L)
      for (int l = 0; l < L; ++l) lanes[l] = r.step(lanes[l], v[i + l]);
    for (int l = 0; i + l < m; ++l) lanes[l] = r.step(lanes[l], v[i + l]);
  };
  if constexpr (P::kStaged) {
    alignas(64) V buf[kTile];
    for (std::int64_t t = 0; t < n; t += kTile) {
      const std::int64_t m = std::min(kTile, n - t);
      p(x, at + t, buf, m, k, 0);
      body(buf, m);
    }
  } else {
    body(x + at, n);
  }
  merge_lanes<L / 2>(r, lanes);
  return lanes[0];
}

// Rows [r0, r1) of output row o, columns [j0, j0 + w), folded into acc[0, w).
template <class R, class P>
void reduce_col_block(const R& r, const P& p, const typename P::In* x, const ReduceGeometry& g, std::int64_t o,
                      std::int64_t j0, std::int64_t w, std::int64_t r0, std::int64_t r1, typename R::Acc* acc) {
  for (std::int64_t j = 0; j < w; ++j) acc[j] = r.identity();
  alignas(64) typename P::Value buf[P::kStaged ? kTile : 1];
  for (std::int64_t rr = r0; rr < r1; ++rr) {
    const std::int64_t at = (o * g.extent + rr) * g.inner + j0;
    if constexpr (P::kStaged) {
      p(x, at, buf, w, o * g.inner + j0, 1);
      for (std::int64_t j = 0; j < w; ++j) acc[j] = r.step(acc[j], buf[j]);
    } else {
      const typename P::In* row = x + at;
      for (std::int64_t j = 0; j < w; ++j) acc[j] = r.step(acc[j], row[j]);
    }
  }
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
// Tasks per parallel chunk so that one chunk is worth about kDefaultGrain elements.
inline std::int64_t grain_for(std::int64_t elements_per_task) {
  return std::max<std::int64_t>(1, kDefaultGrain / std::max<std::int64_t>(elements_per_task, 1));
}

}  // namespace detail

template <class R, class P, class E, class Out>
void reduce_rows(const R& r, const P& p, const E& e, const typename P::In* x, Out* y, std::int64_t outer,
                 std::int64_t n) {
  using Acc = typename R::Acc;
  const std::int64_t blocks = std::max<std::int64_t>(1, detail::ceil_div(n, kRowBlock));
  if (blocks == 1) {
    parallel_for(outer, detail::grain_for(n), [&](std::int64_t b, std::int64_t end) {
      for (std::int64_t o = b; o < end; ++o) y[o] = e(detail::reduce_run(r, p, x, o * n, n, o), o);
    });
    return;
  }
  std::vector<Acc> partial(static_cast<std::size_t>(outer * blocks));
  parallel_for(outer * blocks, 1, [&](std::int64_t b, std::int64_t end) {
    for (std::int64_t t = b; t < end; ++t) {
      const std::int64_t o = t / blocks, start = (t % blocks) * kRowBlock;
      partial[t] = detail::reduce_run(r, p, x, o * n + start, std::min(kRowBlock, n - start), o);
    }
  });
  for (std::int64_t o = 0; o < outer; ++o) {
    Acc acc = partial[o * blocks];
    for (std::int64_t b = 1; b < blocks; ++b) acc = r.merge(acc, partial[o * blocks + b]);
    y[o] = e(acc, o);
  }
}

template <class R, class P, class E, class Out>
void reduce_cols(const R& r, const P& p, const E& e, const typename P::In* x, Out* y, const ReduceGeometry& g) {
  using Acc = typename R::Acc;
  const std::int64_t tiles = detail::ceil_div(g.inner, kTile);
  const std::int64_t blocks = std::max<std::int64_t>(1, detail::ceil_div(g.extent, kColBlock));
  const std::int64_t width = std::min(g.inner, kTile);
  if (blocks == 1) {
    parallel_for(g.outer * tiles, detail::grain_for(g.extent * width), [&](std::int64_t b, std::int64_t end) {
      Acc acc[kTile];
      for (std::int64_t t = b; t < end; ++t) {
        const std::int64_t o = t / tiles, j0 = (t % tiles) * kTile, w = std::min(kTile, g.inner - j0);
        detail::reduce_col_block(r, p, x, g, o, j0, w, 0, g.extent, acc);
        for (std::int64_t j = 0; j < w; ++j) y[o * g.inner + j0 + j] = e(acc[j], o * g.inner + j0 + j);
      }
    });
    return;
  }
  // partial[b][k]: block b's fold of output k.
  const std::int64_t outputs = g.outputs();
  std::vector<Acc> partial(static_cast<std::size_t>(blocks * outputs));
  parallel_for(blocks * g.outer * tiles, detail::grain_for(kColBlock * width), [&](std::int64_t b, std::int64_t end) {
    for (std::int64_t t = b; t < end; ++t) {
      const std::int64_t blk = t / (g.outer * tiles), rest = t % (g.outer * tiles);
      const std::int64_t o = rest / tiles, j0 = (rest % tiles) * kTile, w = std::min(kTile, g.inner - j0);
      const std::int64_t r0 = blk * kColBlock, r1 = std::min(g.extent, r0 + kColBlock);
      detail::reduce_col_block(r, p, x, g, o, j0, w, r0, r1, partial.data() + blk * outputs + o * g.inner + j0);
    }
  });
  parallel_for(outputs, detail::grain_for(blocks), [&](std::int64_t b, std::int64_t end) {
    for (std::int64_t k = b; k < end; ++k) {
      Acc acc = partial[k];
      for (std::int64_t blk = 1; blk < blocks; ++blk) acc = r.merge(acc, partial[blk * outputs + k]);
      y[k] = e(acc, k);
    }
  });
}

// out[k] for x [before, kept, after], reducing before and after: each row of `after` values
// reduces on its own (reduce_rows) into partials [before, kept], which then merge along
// `before` in order. One read of x, where gathering [kept, before * after] first copied it.
template <class R, class P, class E, class Out>
void reduce_split(const R& r, const P& p, const E& e, const typename P::In* x, Out* y, std::int64_t before,
                  std::int64_t kept, std::int64_t after) {
  using Acc = typename R::Acc;
  std::vector<Acc> partial(static_cast<std::size_t>(before * kept));
  reduce_rows(r, p, [](Acc a, std::int64_t) { return a; }, x, partial.data(), before * kept, after);
  for (std::int64_t k = 0; k < kept; ++k) {
    Acc acc = partial[static_cast<std::size_t>(k)];
    for (std::int64_t b = 1; b < before; ++b) acc = r.merge(acc, partial[static_cast<std::size_t>(b * kept + k)]);
    y[k] = e(acc, k);
  }
}

// Runs a reduction on the canonical view, choosing the loop by the inner size.
template <class R, class P, class E, class Out>
void reduce_canonical(const R& r, const P& p, const E& e, const typename P::In* x, Out* y, const ReduceGeometry& g) {
  if (g.outputs() == 0) return;
  if (g.inner == 1)
    reduce_rows(r, p, e, x, y, g.outer, g.extent);
  else
    reduce_cols(r, p, e, x, y, g);
}

}  // namespace kiln::cpu
