#include "kiln/devices/shape_plans.h"

#include "kiln/ops/attrs_layout.h"
#include "kiln/ops/attrs_window.h"

namespace kiln {

void CopyBox::push_dim(std::int64_t n, std::int64_t src_step) {
  KILN_CHECK(rank < kMaxCopyRank, "layout", "internal error: copy rank above " + std::to_string(kMaxCopyRank));
  size[rank] = n;
  src_stride[rank] = src_step;
  ++rank;
}

CopyBox layout_box(const OpIr& op) {
  const Shape &in = op.inputs[0].shape, &out = op.outputs[0].shape;
  const Shape st = contiguous_strides(in);
  const auto& t = op.attrs.ints;
  CopyBox b;
  switch (op.kind) {
    case OpKind::permute:
      for (std::int64_t p : t) b.push_dim(in[static_cast<int>(p)], st[static_cast<int>(p)]);
      break;
    case OpKind::expand: {
      const int lead = out.rank() - in.rank();
      for (int d = 0; d < out.rank(); ++d) b.push_dim(out[d], d < lead || in[d - lead] == 1 ? 0 : st[d - lead]);
      break;
    }
    case OpKind::slice: {
      const SliceAttrs s = SliceAttrs::decode(op);
      for (int d = 0; d < in.rank(); ++d) {
        const SliceRange& r = s.dims[static_cast<std::size_t>(d)];
        b.src_offset += r.start * st[d];
        b.push_dim(out[d], st[d] * r.step);
      }
      break;
    }
    case OpKind::flip: {
      bool flipped[kMaxRank] = {};
      // A 0-d tensor accepts dim 0 like torch, with nothing to reverse.
      for (std::int64_t d : t)
        if (d < in.rank()) flipped[d] = true;
      for (int d = 0; d < in.rank(); ++d) {
        if (flipped[d]) b.src_offset += (in[d] - 1) * st[d];
        b.push_dim(in[d], flipped[d] ? -st[d] : st[d]);
      }
      break;
    }
    case OpKind::repeat: {
      // Output dim d of size r*s, read row-major, is (r, s) with the input's stride on s and 0
      // on r: an expand of the input viewed with a unit dim before each of its dims.
      const int lead = static_cast<int>(t.size()) - in.rank();
      for (int d = 0; d < static_cast<int>(t.size()); ++d) {
        b.push_dim(t[d], 0);
        if (d >= lead) b.push_dim(in[d - lead], st[d - lead]);
      }
      break;
    }
    default: throw Error(op_name(op.kind), "internal error: not a layout op with a copy box");
  }
  return b;
}

WindowGeometry window_geometry(const OpIr& op, const Shape& image_shape) {
  const WindowAttrs w = WindowAttrs::decode(op);
  const int s = w.dims;
  WindowGeometry g;
  g.batch_channels = image_shape[0] * image_shape[1];
  g.pad_value = w.pad_value;
  for (int d = 0; d < s; ++d) {
    const int e = 3 - s + d;
    g.image[e] = image_shape[2 + d];
    g.kernel[e] = w.kernel[d];
    g.dilation[e] = w.dilation[d];
    g.padding[e] = w.padding[d];
    g.stride[e] = w.stride[d];
    g.out[e] = (g.image[e] + 2 * g.padding[e] - g.dilation[e] * (g.kernel[e] - 1) - 1) / g.stride[e] + 1;
  }
  return g;
}

}  // namespace kiln
