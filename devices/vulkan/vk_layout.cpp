// Layout kernels on Vulkan. As on the CPU, each op only describes itself as a strided copy (see
// vk_layout_copy.h): which box of the input lands where in the output (for permute, expand,
// slice, flip and repeat the box both devices use, devices/shape_plans.h), one dispatch per op (cat:
// one per non-empty input; pad: one, the fill folded into the copy's bounds). reshape has no
// kernel: it is a view, the executor hands the input's buffer to the output. tril and triu are
// a masked copy of their own.
#include <algorithm>

#include "kiln/devices/shape_plans.h"
#include "kiln/ops/attrs_layout.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {
namespace {

// permute, expand, slice, flip, repeat: the op's box of input 0 into the contiguous output.
void box_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& a) {
  if (op.outputs[0].numel() == 0) return;
  const CopyBox box = layout_box(op);
  StridedCopy c;
  c.elem_bytes = dtype_size(op.inputs[0].dtype);
  c.src = a.inputs[0];
  c.dst = a.outputs[0];
  c.src_offset = box.src_offset;
  for (int d = 0; d < box.rank; ++d) c.push_dim(box.size[d], box.src_stride[d], 0);
  set_contiguous_dst(c);
  run_strided_copy(dev, op_name(op.kind), c);
}

// Each input is an (outer, rows * inner) block written at its offset along the cat dim.
void cat_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& a) {
  const TensorIr& out = op.outputs[0];
  if (out.numel() == 0) return;
  const int rank = out.shape.rank();
  const int dim = static_cast<int>(op.attrs.dim < 0 ? op.attrs.dim + rank : op.attrs.dim);
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= out.shape[d];
  for (int d = dim + 1; d < rank; ++d) inner *= out.shape[d];
  const std::int64_t out_row = out.shape[dim] * inner;
  std::int64_t at = 0;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorIr& x = op.inputs[i];
    // An empty input adds nothing; a skipped 1-D [0] input has no cat dim to read at all.
    if (x.numel() == 0) continue;
    const std::int64_t row = x.shape[dim] * inner;
    StridedCopy c;
    c.elem_bytes = dtype_size(out.dtype);
    c.src = a.inputs[i];
    c.dst = a.outputs[0];
    c.dst_offset = at;
    c.push_dim(outer, row, out_row);
    c.push_dim(row, 1, 1);
    run_strided_copy(dev, "cat", c);
    at += row;
  }
}

// One pass over the output: inside the input's box (bounds per dim) a copy, elsewhere the fill
// value. Negative pads crop: the source then starts inside the input.
void pad_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& a) {
  const TensorIr &x = op.inputs[0], &y = op.outputs[0];
  if (y.numel() == 0) return;
  const int rank = x.shape.rank();
  const Shape in_st = contiguous_strides(x.shape);
  const PadAttrs pads = PadAttrs::decode(op);
  StridedCopy c;
  c.elem_bytes = dtype_size(x.dtype);
  c.src = x.numel() ? a.inputs[0] : a.outputs[0];  // never read when the input is empty
  c.dst = a.outputs[0];
  c.fill = raw_word(pads.value, y.dtype);
  for (int d = 0; d < rank; ++d) {
    const std::int64_t before = pads.before_dim(d, rank);
    // Output coordinate o reads input coordinate o - before.
    c.src_offset -= before * in_st[d];
    const std::int64_t hi = x.numel() ? before + x.shape[d] : 0;
    c.push_bounded_dim(y.shape[d], in_st[d], 0, before, hi);
  }
  set_contiguous_dst(c);
  run_strided_copy(dev, "pad", c);
}

// Row i of each matrix keeps the columns j with j - i <= k (tril) or j - i >= k (triu) and
// zeroes the rest. Each thread reads only its own element, so running in place is safe.
template <bool kLower>
void triangle_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& a) {
  const TensorIr& x = op.inputs[0];
  const std::int64_t n = x.numel();
  if (n == 0) return;
  check_32bit_elements(op_name(op.kind), n);
  const std::int64_t rows = x.shape[x.shape.rank() - 2], cols = x.shape.back();
  // Diagonals beyond the matrix behave like the nearest one outside it.
  const auto k = static_cast<std::int32_t>(std::clamp<std::int64_t>(op.attrs.dim, -rows - 1, cols + 1));
  const std::size_t elem = dtype_size(x.dtype);
  const FastDiv by_cols(static_cast<std::uint32_t>(cols)), by_rows(static_cast<std::uint32_t>(rows));
  LaunchArgs args;
  args.buffer(*a.inputs[0]).buffer(*a.outputs[0]).u32(static_cast<std::uint32_t>(n));
  args.u32(by_cols.d).u32(by_cols.magic).u32(by_cols.shifts).u32(by_rows.d).u32(by_rows.magic).u32(by_rows.shifts);
  args.u64(static_cast<std::uint32_t>(k));
  const std::string key = std::string("layout/") + (kLower ? "tril" : "triu") + "/e" + std::to_string(elem);
  dev.launch(
      key, op_name(op.kind),
      [&] {
        const std::string ptr = raw_pointer_type(elem), val = raw_value_type(elem);
        std::string s = dev.prelude() + glsl_fast_div() + "layout(local_size_x = 256) in;\nvoid main() {\n";
        s += "  " + ptr + " src = " + ptr + "(arg_u64(0));\n  " + ptr + " dst = " + ptr + "(arg_u64(1));\n";
        s += R"(  uint n = arg_u32(2);
  uint cols = arg_u32(3), cmg = arg_u32(4), csh = arg_u32(5), rows = arg_u32(6), rmg = arg_u32(7), rsh = arg_u32(8);
  int k = int(arg_u32(9));
  KILN_FOR_EACH(e, n) {
    uint r = kiln_div(e, cmg, csh);
    int j = int(e - r * cols);
    int i = int(r - kiln_div(r, rmg, rsh) * rows);
)";
        s += std::string("    bool keep = ") + (kLower ? "j - i <= k" : "j - i >= k") + ";\n";
        s += "    " + raw_store(elem, "dst", "e", "keep ? " + raw_load(elem, "src", "e") + " : " + val + "(0)") +
             "\n  }\n}\n";
        return s;
      },
      args, groups_for(static_cast<std::uint64_t>(n)));
}

}  // namespace

void register_layout_kernels(KernelTable& t) {
  // The table every device shares (devices/kernel_tables.def).
#define KILN_LAYOUT_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::vk
