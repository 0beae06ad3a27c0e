// How a reduction's input maps onto the canonical view [outer, extent, inner] of
// reduce_driver.h. Dims of size 1 never matter; adjacent dims of the same kind (kept or
// reduced) merge. When the reduced dims still form one run, the input already is the canonical
// view; otherwise (e.g. dims {0, 2} of [A, B, C]) it is gathered into [kept..., reduced...]
// order first, which makes every reduced run a contiguous row.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/devices/cpu/reduce_driver.h"
#include "kiln/ops/shape.h"

namespace kiln::cpu {

struct ReduceLayout {
  ReduceGeometry geometry;
  bool needs_gather = false;
  struct Run {
    std::int64_t size, stride;
  };
  std::vector<Run> kept, reduced;  // outermost first; only filled when needs_gather
  // needs_gather, with the reduced dims around one kept run: [before, kept, after] as
  // reduced[0], kept[0], reduced[1] (all dims but the channels of [N, C, H, W]: a batch norm's
  // statistics, a conv bias's gradient). The plain reductions take it in two stages
  // (reduce_split) instead of gathering.
  bool split = false;
};

// `dims` are sorted, unique and non-negative (ops/reduce_rules.h).
ReduceLayout plan_reduce_layout(const Shape& shape, const std::vector<std::int64_t>& dims);

// The view of an op along one dim (argmax, cumsum, softmax): [before, dim, after].
ReduceGeometry geometry_along_dim(const Shape& shape, int dim);

// y[q, p] = x at kept index q and reduced index p: rows of geometry.extent elements.
template <class T>
void gather_reduced_last(const T* x, T* y, const ReduceLayout& layout);

}  // namespace kiln::cpu
