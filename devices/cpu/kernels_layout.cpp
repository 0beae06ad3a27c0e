// CPU kernels of the layout family. Each one only describes its op as a strided copy (see
// layout_strided_copy.h): which box of the input lands where in the output (for permute, expand,
// slice, flip and repeat the box both devices use, devices/shape_plans.h). reshape has no
// kernel: it is a view, the executor hands the input's buffer to the output.
#include <algorithm>
#include <cstring>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/layout_strided_copy.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/devices/shape_plans.h"
#include "kiln/ops/attrs_layout.h"

namespace kiln::cpu {
namespace {

const std::byte* in_bytes(const KernelArgs& a, std::size_t i) { return in_ptr<std::byte>(a, i); }
std::byte* out_bytes(const KernelArgs& a, std::size_t i) { return out_ptr<std::byte>(a, i); }

// permute, expand, slice, flip, repeat: the op's box of input 0 into the contiguous output.
void box_kernel(const OpIr& op, const KernelArgs& a) {
  if (op.outputs[0].numel() == 0) return;
  const CopyBox box = layout_box(op);
  StridedCopy c;
  c.elem_bytes = dtype_size(op.inputs[0].dtype);
  c.src = in_bytes(a, 0) + box.src_offset * static_cast<std::int64_t>(c.elem_bytes);
  c.dst = out_bytes(a, 0);
  for (int d = 0; d < box.rank; ++d) c.push_dim(box.size[d], box.src_stride[d], 0);
  set_contiguous_dst(c);
  run_strided_copy(c);
}

// Each input is an (outer, rows * inner) block written at its offset along the cat dim.
void cat_kernel(const OpIr& op, const KernelArgs& a) {
  const TensorIr& out = op.outputs[0];
  if (out.numel() == 0) return;
  const int rank = out.shape.rank();
  const int dim = static_cast<int>(op.attrs.dim < 0 ? op.attrs.dim + rank : op.attrs.dim);
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= out.shape[d];
  for (int d = dim + 1; d < rank; ++d) inner *= out.shape[d];
  const std::int64_t out_row = out.shape[dim] * inner;
  const std::size_t elem = dtype_size(out.dtype);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorIr& x = op.inputs[i];
    // An empty input adds nothing; a skipped 1-D [0] input has no cat dim to read at all.
    if (x.numel() == 0) continue;
    const std::int64_t row = x.shape[dim] * inner;
    StridedCopy c;
    c.elem_bytes = elem;
    c.src = in_bytes(a, i);
    c.dst = out_bytes(a, 0) + at * static_cast<std::int64_t>(elem);
    c.push_dim(outer, row, out_row);
    c.push_dim(row, 1, 1);
    run_strided_copy(c);
    at += row;
  }
}

std::uint64_t fill_pattern(DType dtype, double value) {
  std::uint64_t bits = 0;
  switch (dtype) {
    case DType::f32: {
      const float f = static_cast<float>(value);
      std::memcpy(&bits, &f, sizeof f);
      break;
    }
    case DType::i64: {
      const auto i = static_cast<std::int64_t>(value);  // the shape rule checked the range
      std::memcpy(&bits, &i, sizeof i);
      break;
    }
    default: bits = value != 0.0 ? 1 : 0;
  }
  return bits;
}

// Fill, then copy the part of the input that survives (negative pads crop) into the interior.
void pad_kernel(const OpIr& op, const KernelArgs& a) {
  const TensorIr &x = op.inputs[0], &y = op.outputs[0];
  if (y.numel() == 0) return;
  const int rank = x.shape.rank();
  const Shape in_st = contiguous_strides(x.shape), out_st = contiguous_strides(y.shape);
  const PadAttrs pads = PadAttrs::decode(op);
  bool grows = false;
  std::int64_t src_offset = 0, dst_offset = 0;
  StridedCopy c;
  c.elem_bytes = dtype_size(x.dtype);
  for (int d = 0; d < rank; ++d) {
    const std::int64_t before = pads.before_dim(d, rank), after = pads.after_dim(d, rank);
    grows = grows || before > 0 || after > 0;
    const std::int64_t kept = x.shape[d] - std::max<std::int64_t>(0, -before) - std::max<std::int64_t>(0, -after);
    c.push_dim(std::max<std::int64_t>(kept, 0), in_st[d], out_st[d]);
    src_offset += std::max<std::int64_t>(0, -before) * in_st[d];
    dst_offset += std::max<std::int64_t>(0, before) * out_st[d];
  }
  if (grows) fill_elements(out_bytes(a, 0), y.numel(), c.elem_bytes, fill_pattern(y.dtype, pads.value));
  if (x.numel() == 0) return;
  const auto elem = static_cast<std::int64_t>(c.elem_bytes);
  c.src = in_bytes(a, 0) + src_offset * elem;
  c.dst = out_bytes(a, 0) + dst_offset * elem;
  run_strided_copy(c);
}

// Row i of each matrix keeps columns [lo, hi) and zeroes the rest. Safe in place: a kept element
// is left where it is, a dropped one is only written.
template <bool kLower>
void triangle_kernel(const OpIr& op, const KernelArgs& a) {
  const TensorIr& x = op.inputs[0];
  if (x.numel() == 0) return;
  const std::int64_t rows = x.shape[x.shape.rank() - 2], cols = x.shape.back();
  const std::int64_t k = op.attrs.dim;
  const std::size_t elem = dtype_size(x.dtype);
  const std::byte* src = in_bytes(a, 0);
  std::byte* dst = out_bytes(a, 0);
  const std::int64_t grain = std::max<std::int64_t>(1, kDefaultGrain / cols);
  parallel_for(x.numel() / cols, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t g = b; g < e; ++g) {
      const std::int64_t i = g % rows;
      const std::int64_t lo = kLower ? 0 : std::clamp<std::int64_t>(i + k, 0, cols);
      const std::int64_t hi = kLower ? std::clamp<std::int64_t>(i + k + 1, 0, cols) : cols;
      std::byte* d = dst + static_cast<std::size_t>(g * cols) * elem;
      const std::byte* s = src + static_cast<std::size_t>(g * cols) * elem;
      if (s != d && hi > lo) std::memcpy(d + lo * elem, s + lo * elem, static_cast<std::size_t>(hi - lo) * elem);
      std::memset(d, 0, static_cast<std::size_t>(lo) * elem);
      std::memset(d + hi * elem, 0, static_cast<std::size_t>(cols - hi) * elem);
    }
  });
}

}  // namespace

void register_layout_kernels(KernelTable& t) {
  // The table every device shares (devices/kernel_tables.def).
#define KILN_LAYOUT_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::cpu
