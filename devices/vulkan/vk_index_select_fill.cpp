// index_select, masked_fill and one_hot on Vulkan: one thread per output element, coordinates
// by multiply-high division, elements moved as raw words (one kernel per element size).
#include <algorithm>

#include "kiln/devices/vulkan/vk_index.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::index {
namespace {

LaunchArgs& push_div(LaunchArgs& a, std::int64_t divisor) {
  const FastDiv div(static_cast<std::uint32_t>(divisor));
  return a.u32(div.d).u32(div.magic).u32(div.shifts);
}

}  // namespace

// Output element (o, j, e) of the (outer, n, inner) view is x[o, index[j], e].
void index_select_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const std::int64_t total = op.outputs[0].numel();
  if (total == 0) return;
  check_32bit_elements("index_select", total);
  check_32bit_elements("index_select", op.inputs[0].numel());
  const IndexDims x = index_dims(op.inputs[0].shape);
  const int dim = index_op_dim(op, x.rank);
  const std::int64_t n = op.inputs[1].numel(), size = x.size[dim], inner = x.stride[dim];
  const std::size_t elem = dtype_size(op.outputs[0].dtype);
  RangeFlag flag(dev);
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.inputs[1]).buffer(*args.outputs[0]).address(flag.address());
  a.u32(static_cast<std::uint32_t>(total)).u32(static_cast<std::uint32_t>(size));
  push_div(a, inner);
  push_div(a, n);
  dev.launch(
      "index/index_select/e" + std::to_string(static_cast<std::int64_t>(elem)), "index_select",
      [&] {
        const std::string ptr = raw_pointer_type(elem);
        std::string s = dev.prelude() + glsl_fast_div() + glsl_index_check();
        s += "layout(local_size_x = 256) in;\nvoid main() {\n";
        s += "  " + ptr + " x = " + ptr + "(arg_u64(0));\n  " + ptr + " out0 = " + ptr + "(arg_u64(2));\n";
        s += R"(  I64s idx = I64s(arg_u64(1));
  uint64_t flag = arg_u64(3);
  uint total = arg_u32(4), size = arg_u32(5);
  uint inner = arg_u32(6), img = arg_u32(7), ish = arg_u32(8);
  uint n = arg_u32(9), nmg = arg_u32(10), nsh = arg_u32(11);
  KILN_FOR_EACH(i, total) {
    uint r = kiln_div(i, img, ish);
    uint e = i - r * inner;
    uint o = kiln_div(r, nmg, nsh);
    int64_t v = idx.v[r - o * n];
    if (!kiln_in_range(v, size)) { kiln_index_error(flag, r - o * n); continue; }
)";
        s += "    " + raw_store(elem, "out0", "i", raw_load(elem, "x", "(o * size + uint(v)) * inner + e")) +
             "\n  }\n}\n";
        return s;
      },
      a, groups_for(static_cast<std::uint64_t>(total)));
  flag.defer_index(op, args, 1, nullptr, dim, size);
}

// The mask is right-aligned against x; neighbouring dims that the mask covers contiguously or
// broadcasts over are merged (as on the CPU), leaving a few dims with mask strides.
void masked_fill_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const std::int64_t numel = op.outputs[0].numel();
  if (numel == 0) return;
  check_32bit_elements("masked_fill", numel);
  // Runs whose mask stride is 1 or 0, innermost first (devices/shape_plans.h).
  MaskRuns runs = mask_runs(op.outputs[0].shape, op.inputs[1].shape);
  std::int64_t* size = runs.size;
  std::int64_t* mstride = runs.mask_stride;
  int& rank = runs.rank;
  if (rank == 0) size[rank] = 1, mstride[rank] = 0, ++rank;
  const std::size_t elem = dtype_size(op.outputs[0].dtype);
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.inputs[1]).buffer(*args.outputs[0]).u32(static_cast<std::uint32_t>(numel));
  a.u64(raw_word(op.attrs.scalar, op.outputs[0].dtype));
  for (int d = 0; d < rank; ++d) push_div(a, size[d]).u32(static_cast<std::uint32_t>(mstride[d]));
  dev.launch(
      "index/masked_fill/e" + std::to_string(static_cast<std::int64_t>(elem)) + "/r" + std::to_string(rank),
      "masked_fill",
      [&] {
        const std::string ptr = raw_pointer_type(elem), val = raw_value_type(elem);
        std::string s = dev.prelude() + glsl_fast_div();
        s += "#define R " + std::to_string(rank) + "\nlayout(local_size_x = 256) in;\nvoid main() {\n";
        s += "  " + ptr + " x = " + ptr + "(arg_u64(0));\n  " + ptr + " out0 = " + ptr + "(arg_u64(2));\n";
        s += "  " + val + " fill = " + (elem == 8 ? "arg_i64(4)" : "arg_u32(4)") + ";\n";
        s += R"(  U8s mask = U8s(arg_u64(1));
  uint numel = arg_u32(3);
  uint sz[R], mg[R], sh[R], ms[R];
  for (int k = 0; k < R; ++k) {
    uint b = 5u + 4u * uint(k);
    sz[k] = arg_u32(b); mg[k] = arg_u32(b + 1u); sh[k] = arg_u32(b + 2u); ms[k] = arg_u32(b + 3u);
  }
  KILN_FOR_EACH(i, numel) {
    uint rest = i, mo = 0u;
    for (int k = 0; k < R - 1; ++k) {
      uint q = kiln_div(rest, mg[k], sh[k]);
      mo += (rest - q * sz[k]) * ms[k];
      rest = q;
    }
    mo += rest * ms[R - 1];
)";
        s += "    " + raw_store(elem, "out0", "i", "uint(mask.v[mo]) != 0u ? fill : " + raw_load(elem, "x", "i")) +
             "\n  }\n}\n";
        return s;
      },
      a, groups_for(static_cast<std::uint64_t>(numel)));
}

void one_hot_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const std::int64_t n = op.inputs[0].numel(), classes = op.outputs[0].shape.back(), total = n * classes;
  if (total == 0) return;
  check_32bit_elements("one_hot", total);
  RangeFlag flag(dev);
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.outputs[0]).address(flag.address()).u32(static_cast<std::uint32_t>(total));
  push_div(a, classes);
  dev.launch(
      "index/one_hot", "one_hot",
      [&] {
        std::string s = dev.prelude() + glsl_fast_div() + glsl_index_check();
        s += R"(layout(local_size_x = 256) in;
void main() {
  I64s idx = I64s(arg_u64(0));
  I64s out0 = I64s(arg_u64(1));
  uint64_t flag = arg_u64(2);
  uint total = arg_u32(3), classes = arg_u32(4), cmg = arg_u32(5), csh = arg_u32(6);
  KILN_FOR_EACH(i, total) {
    uint r = kiln_div(i, cmg, csh);
    uint c = i - r * classes;
    int64_t v = idx.v[r];
    if (!kiln_in_range(v, classes) && c == 0u) kiln_index_error(flag, r);
    out0.v[i] = v == int64_t(c) ? 1l : 0l;
  }
}
)";
        return s;
      },
      a, groups_for(static_cast<std::uint64_t>(total)));
  flag.defer_classes(op, args, classes);
}

}  // namespace kiln::vk::index
