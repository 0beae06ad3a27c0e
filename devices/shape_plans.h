// Device-independent planning that both devices' kernels share: the box of its input that a
// layout op copies, how torch's index ops see shapes (and the error an index out of range
// gives), masked_fill's mask runs, and the runs a reduction's shape folds into. Pure functions
// of shapes and attrs; each device only executes what they plan.
#pragma once
#include <cstdint>
#include <vector>

#include <string>

#include "kiln/ops/ir.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/shape.h"

namespace kiln {

// repeat views each dim as (repeat, size): twice the tensor rank.
inline constexpr int kMaxCopyRank = 2 * kMaxRank;

// A box of input 0's elements walked row-major into the contiguous output 0: element
// (c_0, ..., c_{r-1}) comes from src_offset + sum c_d * src_stride_d (strides in elements; 0 for
// expand and repeat, negative for flip, multiplied for slice steps).
struct CopyBox {
  int rank = 0;
  std::array<std::int64_t, kMaxCopyRank> size{};
  std::array<std::int64_t, kMaxCopyRank> src_stride{};
  std::int64_t src_offset = 0;
  void push_dim(std::int64_t n, std::int64_t src_step);
};

// The box of permute, expand, slice, flip or repeat (their outputs are exactly the box).
CopyBox layout_box(const OpIr& op);

// Sizes and contiguous strides as torch's index ops see them: a 0-d tensor is 1-D of size 1.
struct IndexDims {
  int rank = 1;
  std::int64_t size[kMaxRank] = {1};
  std::int64_t stride[kMaxRank] = {1};
};

inline IndexDims index_dims(const Shape& s) {
  IndexDims d;
  if (s.rank() == 0) return d;
  d.rank = s.rank();
  std::int64_t acc = 1;
  for (int i = d.rank - 1; i >= 0; --i) {
    d.size[i] = s[i];
    d.stride[i] = acc;
    acc *= s[i];
  }
  return d;
}

// The op's dim attribute wrapped into [0, rank) (the shape rule already checked its range).
inline int index_op_dim(const OpIr& op, int rank) {
  const auto dim = static_cast<int>(op.attrs.dim);
  return dim < 0 ? dim + rank : dim;
}

// The error of an index value outside [0, size) along `dim`, as every device words it.
[[noreturn]] inline void throw_index_out_of_range(const OpIr& op, std::int64_t value, int dim, std::int64_t size) {
  std::string shapes;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) shapes += (i ? ", " : "") + describe(op.inputs[i]);
  throw Error(op_name(op.kind), "index " + std::to_string(value) + " is out of range for dim " + std::to_string(dim) +
                                    " of size " + std::to_string(size) + " (inputs " + shapes + ")");
}

// masked_fill's view of x against its broadcast mask: x's dims right-aligned against the mask's,
// neighbours merged wherever the mask covers both contiguously or broadcasts over both, so each
// run walks the mask with one stride (0 where it broadcasts). Innermost run first.
struct MaskRuns {
  int rank = 0;
  std::int64_t size[kMaxRank] = {};
  std::int64_t mask_stride[kMaxRank] = {};
};

inline MaskRuns mask_runs(const Shape& xs, const Shape& ms) {
  MaskRuns r;
  std::int64_t macc = 1;
  for (int d = xs.rank() - 1; d >= 0; --d) {
    const int md = ms.rank() - xs.rank() + d;
    const bool covered = md >= 0 && ms[md] != 1;
    const std::int64_t stride = covered ? macc : 0;
    if (covered) macc *= ms[md];
    if (xs[d] == 1) continue;
    const int last = r.rank - 1;
    if (r.rank > 0 && ((stride == 0 && r.mask_stride[last] == 0) ||
                       (stride != 0 && r.mask_stride[last] != 0 && stride == r.mask_stride[last] * r.size[last]))) {
      r.size[last] *= xs[d];
      continue;
    }
    r.size[r.rank] = xs[d];
    r.mask_stride[r.rank] = stride;
    ++r.rank;
  }
  return r;
}

// A reduction's shape as runs of adjacent dims of one kind (kept or reduced), outermost first:
// dims of size 1 never matter, and neighbours of the same kind fold into one run whose stride is
// its innermost dim's. `dims` are the reduced dims, sorted.
struct ReduceRun {
  std::int64_t size, stride;
  bool reduced;
};

inline std::vector<ReduceRun> reduce_runs(const Shape& shape, const std::vector<std::int64_t>& dims) {
  const Shape strides = contiguous_strides(shape);
  std::vector<ReduceRun> runs;
  std::size_t k = 0;
  for (int d = 0; d < shape.rank(); ++d) {
    const bool reduced = k < dims.size() && dims[k] == d;
    if (reduced) ++k;
    if (shape[d] == 1) continue;
    if (!runs.empty() && runs.back().reduced == reduced) {
      runs.back().size *= shape[d];
      runs.back().stride = strides[d];
    } else {
      runs.push_back({shape[d], strides[d], reduced});
    }
  }
  return runs;
}

// The window of an unfold or fold op over 3 spatial dims (missing leading dims have size 1).
// `image` is unfold's input and fold's output; `out` counts the windows along each dim.
struct WindowGeometry {
  std::int64_t batch_channels = 0;  // N * C
  std::int64_t image[3] = {1, 1, 1};
  std::int64_t out[3] = {1, 1, 1};
  std::int64_t kernel[3] = {1, 1, 1};
  std::int64_t dilation[3] = {1, 1, 1};
  std::int64_t padding[3] = {0, 0, 0};
  std::int64_t stride[3] = {1, 1, 1};
  double pad_value = 0.0;  // unfold: written where a window reaches into the padding
  std::int64_t plane() const { return image[0] * image[1] * image[2]; }
  std::int64_t volume() const { return kernel[0] * kernel[1] * kernel[2]; }  // K
  std::int64_t windows() const { return out[0] * out[1] * out[2]; }          // L
};

// From the op's WindowAttrs (ops/attrs_window.h) and the image's shape [N, C, *spatial].
WindowGeometry window_geometry(const OpIr& op, const Shape& image_shape);

}  // namespace kiln
