// The window of a pooling op (max_pool, avg_pool and their gradients) as both devices' kernels
// see it: two spatial dims, a 1-D op being 2-D of height 1; N * C planes, positions in a plane
// row-major (h * W + w: the indices max pooling outputs). Along each dim, output o's window
// starts at o * stride - padding; what torch does at the borders is spelled out once here.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kiln/ops/attrs_window.h"

namespace kiln {

struct PoolGeometry {
  std::int64_t planes = 0;  // N * C
  std::int64_t in[2] = {1, 1}, out[2] = {1, 1};
  std::int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};
  bool count_include_pad = true;

  std::int64_t in_plane() const { return in[0] * in[1]; }
  std::int64_t out_plane() const { return out[0] * out[1]; }
  std::int64_t start(int d, std::int64_t o) const { return o * stride[d] - padding[d]; }

  // Max pooling: the first coordinate of output o's window along d that lies inside the input
  // (the start moved on by whole dilations). Before any element wins, torch's index names the
  // window's first element inside the input: so does an all -inf window's.
  std::int64_t first_inside(int d, std::int64_t o) const {
    const std::int64_t s = start(d, o);
    return s >= 0 ? s : s + (-s + dilation[d] - 1) / dilation[d] * dilation[d];
  }

  // Average pooling along d (no dilation): the window clipped to the input, [lo, hi), and its
  // size clipped to the padded input only (count_include_pad's factor), as torch's avg_pool2d.
  struct AvgSpan {
    std::int64_t lo, hi, padded;
  };
  AvgSpan avg_span(int d, std::int64_t o) const {
    const std::int64_t s = start(d, o), e = std::min(s + kernel[d], in[d] + padding[d]);
    return {std::max<std::int64_t>(s, 0), std::min(e, in[d]), e - s};
  }
  // The divisor of output (oh, ow) given the spans of its two dims; 0 for a window wholly in the
  // padding (torch writes 0 there and sends it no gradient).
  std::int64_t avg_divisor(const AvgSpan& h, const AvgSpan& w) const {
    if (h.lo >= h.hi || w.lo >= w.hi) return 0;
    return count_include_pad ? h.padded * w.padded : (h.hi - h.lo) * (w.hi - w.lo);
  }
};

// From the op's PoolAttrs and shapes: the image is input 0 of max_pool and avg_pool, the attrs'
// input_size for the gradients; the windows are the forward's output, or dy (input 0).
inline PoolGeometry pool_geometry(const OpIr& op) {
  const PoolAttrs a = PoolAttrs::decode(op);
  const bool grad = PoolAttrs::has_input_size(op.kind);
  const Shape& windows = grad ? op.inputs[0].shape : op.outputs[0].shape;
  PoolGeometry g;
  g.planes = windows[0] * windows[1];
  g.count_include_pad = a.count_include_pad;
  for (int d = 0; d < a.dims; ++d) {
    const int e = 2 - a.dims + d;
    g.in[e] = grad ? a.input_size[d] : op.inputs[0].shape[2 + d];
    g.out[e] = windows[2 + d];
    g.kernel[e] = a.kernel[d];
    g.stride[e] = a.stride[d];
    g.padding[e] = a.padding[d];
    g.dilation[e] = a.dilation[d];
  }
  return g;
}

}  // namespace kiln
