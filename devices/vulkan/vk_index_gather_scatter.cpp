// gather, scatter and scatter_add on Vulkan. gather runs one thread per output element (reads
// of the index and writes of the output are coalesced). scatter and scatter_add run one thread
// per column (a coordinate of the index in every dim but `dim`), which walks its positions
// along `dim` in order: two columns never write the same element, so no atomics are needed and
// the result is deterministic and identical to the CPU's, duplicates included (scatter: the
// last write wins; scatter_add: the sum in index order, for 16-bit floats each partial sum
// rounded to their dtype). Neighbouring threads take neighbouring
// columns, so accesses stay coalesced unless `dim` is the last dim.
#include "kiln/devices/vulkan/vk_index.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::index {
namespace {

void gather_typed(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const std::int64_t n = op.outputs[0].numel();
  if (n == 0) return;
  check_32bit_elements("gather", n);
  check_32bit_elements("gather", op.inputs[0].numel());
  const IndexDims index = index_dims(op.inputs[1].shape), x = index_dims(op.inputs[0].shape);
  const int dim = index_op_dim(op, index.rank);
  const std::size_t elem = dtype_size(op.outputs[0].dtype);
  RangeFlag flag(dev);
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.inputs[1]).buffer(*args.outputs[0]).address(flag.address());
  a.u32(static_cast<std::uint32_t>(n)).u32(static_cast<std::uint32_t>(x.size[dim]));
  a.u32(static_cast<std::uint32_t>(x.stride[dim]));
  for (int d = 0; d < index.rank; ++d) {
    const FastDiv div(static_cast<std::uint32_t>(index.size[d]));
    a.u32(div.d).u32(div.magic).u32(div.shifts).u32(d == dim ? 0 : static_cast<std::uint32_t>(x.stride[d]));
  }
  const std::string key =
      "index/gather/e" + std::to_string(static_cast<std::int64_t>(elem)) + "/r" + std::to_string(index.rank);
  dev.launch(
      key, "gather",
      [&] {
        const std::string ptr = raw_pointer_type(elem);
        std::string s = dev.prelude() + glsl_fast_div() + glsl_index_check();
        s += "#define R " + std::to_string(index.rank) + "\nlayout(local_size_x = 256) in;\nvoid main() {\n";
        s += "  " + ptr + " x = " + ptr + "(arg_u64(0));\n  " + ptr + " out0 = " + ptr + "(arg_u64(2));\n";
        s += R"(  I64s idx = I64s(arg_u64(1));
  uint64_t flag = arg_u64(3);
  uint n = arg_u32(4), x_size = arg_u32(5), x_step = arg_u32(6);
  uint sz[R], mg[R], sh[R], xs[R];
  for (int k = 0; k < R; ++k) {
    uint b = 7u + 4u * uint(k);
    sz[k] = arg_u32(b); mg[k] = arg_u32(b + 1u); sh[k] = arg_u32(b + 2u); xs[k] = arg_u32(b + 3u);
  }
  KILN_FOR_EACH(i, n) {
    uint rest = i, xo = 0u;
    for (int k = R - 1; k > 0; --k) {
      uint q = kiln_div(rest, mg[k], sh[k]);
      xo += (rest - q * sz[k]) * xs[k];
      rest = q;
    }
    xo += rest * xs[0];
    int64_t v = idx.v[i];
    if (!kiln_in_range(v, x_size)) { kiln_index_error(flag, i); continue; }
)";
        s += "    " + raw_store(elem, "out0", "i", raw_load(elem, "x", "xo + uint(v) * x_step")) + "\n  }\n}\n";
        return s;
      },
      a, groups_for(static_cast<std::uint64_t>(n)));
  flag.defer_index(op, args, 1, nullptr, dim, x.size[dim]);
}

// The GLSL statement that puts `v` (loaded from src) into out0.v[at].
std::string put(DType t, bool add) {
  if (!add) return raw_store(dtype_size(t), "out0", "at", raw_load(dtype_size(t), "src", "so + q * s_step"));
  switch (t) {
    case DType::f32:
    case DType::i64: return "out0.v[at] += src.v[so + q * s_step];";
    case DType::f16:
    case DType::bf16:  // each sum in f32, rounded to 16 bits (as PyTorch's CUDA atomics add)
      return glsl_store(t, "out0", "at", glsl_load(t, "out0", "at") + " + " + glsl_load(t, "src", "so + q * s_step"));
    default: return "out0.v[at] = uint8_t(uint(out0.v[at]) | uint(src.v[so + q * s_step]));";
  }
}

void scatter_typed(VulkanDevice& dev, const OpIr& op, const KernelArgs& args, bool add) {
  const TensorIr& out = op.outputs[0];
  const DType t = out.dtype;
  const std::int64_t n_index = op.inputs[1].numel();
  check_32bit_elements(op_name(op.kind), out.numel());
  check_32bit_elements(op_name(op.kind), op.inputs[2].numel());
  // The executor may give the output the buffer of the index or of src (same dtype and shape)
  // rather than x's: keep a copy of such an input before x is copied over it.
  const std::uint64_t out_at = VulkanDevice::address(*args.outputs[0]);
  BufferPtr index_copy, src_copy;
  const Buffer* index_buf = args.inputs[1];
  const Buffer* src_buf = args.inputs[2];
  if (n_index > 0 && VulkanDevice::address(*index_buf) == out_at) {
    index_copy = dev.memory().allocate(op.inputs[1].bytes());
    dev.copy(*index_buf, *index_copy, op.inputs[1].bytes());
    index_buf = index_copy.get();
  }
  if (n_index > 0 && VulkanDevice::address(*src_buf) == out_at) {
    src_copy = dev.memory().allocate(op.inputs[2].bytes());
    dev.copy(*src_buf, *src_copy, op.inputs[2].bytes());
    src_buf = src_copy.get();
  }
  if (VulkanDevice::address(*args.inputs[0]) != out_at) dev.copy(*args.inputs[0], *args.outputs[0], out.bytes());
  if (n_index == 0) return;

  const IndexDims index = index_dims(op.inputs[1].shape), x = index_dims(op.inputs[0].shape), src = index_dims(op.inputs[2].shape);
  const int dim = index_op_dim(op, index.rank);
  const std::int64_t J = index.size[dim], columns = n_index / J;
  RangeFlag flag(dev);
  LaunchArgs a;
  a.buffer(*args.outputs[0]).buffer(*index_buf).buffer(*src_buf).address(flag.address());
  a.u32(static_cast<std::uint32_t>(columns)).u32(static_cast<std::uint32_t>(J));
  a.u32(static_cast<std::uint32_t>(x.size[dim])).u32(static_cast<std::uint32_t>(x.stride[dim]));
  a.u32(static_cast<std::uint32_t>(index.stride[dim])).u32(static_cast<std::uint32_t>(src.stride[dim]));
  int rank = 0;
  for (int d = 0; d < index.rank; ++d) {
    if (d == dim) continue;
    const FastDiv div(static_cast<std::uint32_t>(index.size[d]));
    a.u32(div.d).u32(div.magic).u32(div.shifts);
    a.u32(static_cast<std::uint32_t>(index.stride[d])).u32(static_cast<std::uint32_t>(src.stride[d]));
    a.u32(static_cast<std::uint32_t>(x.stride[d]));
    ++rank;
  }
  if (rank == 0) {  // one column: a dummy dim of size 1
    const FastDiv div(1);
    a.u32(div.d).u32(div.magic).u32(div.shifts).u32(0).u32(0).u32(0);
    rank = 1;
  }
  std::string key = add ? "index/scatter_add/" : "index/scatter/e";
  key += add ? std::string(dtype_name(t)) : std::to_string(static_cast<std::int64_t>(dtype_size(t)));
  key += "/r";
  key += std::to_string(rank);
  dev.launch(
      key, op_name(op.kind),
      [&] {
        const std::string ptr = add ? glsl_pointer_type(t) : raw_pointer_type(dtype_size(t));
        std::string s = dev.prelude() + glsl_fast_div() + glsl_index_check();
        s += "#define R " + std::to_string(rank) + "\nlayout(local_size_x = 256) in;\nvoid main() {\n";
        s += "  " + ptr + " out0 = " + ptr + "(arg_u64(0));\n  " + ptr + " src = " + ptr + "(arg_u64(2));\n";
        s += R"(  I64s idx = I64s(arg_u64(1));
  uint64_t flag = arg_u64(3);
  uint columns = arg_u32(4), J = arg_u32(5), x_size = arg_u32(6), x_step = arg_u32(7);
  uint i_step = arg_u32(8), s_step = arg_u32(9);
  uint sz[R], mg[R], sh[R], ist[R], ss[R], xs[R];
  for (int k = 0; k < R; ++k) {
    uint b = 10u + 6u * uint(k);
    sz[k] = arg_u32(b); mg[k] = arg_u32(b + 1u); sh[k] = arg_u32(b + 2u);
    ist[k] = arg_u32(b + 3u); ss[k] = arg_u32(b + 4u); xs[k] = arg_u32(b + 5u);
  }
  KILN_FOR_EACH(t, columns) {
    uint rest = t, io = 0u, so = 0u, xo = 0u;
    for (int k = R - 1; k > 0; --k) {
      uint q = kiln_div(rest, mg[k], sh[k]);
      uint c = rest - q * sz[k];
      io += c * ist[k]; so += c * ss[k]; xo += c * xs[k];
      rest = q;
    }
    io += rest * ist[0]; so += rest * ss[0]; xo += rest * xs[0];
    for (uint q = 0u; q < J; ++q) {
      int64_t v = idx.v[io + q * i_step];
      if (!kiln_in_range(v, x_size)) { kiln_index_error(flag, io + q * i_step); continue; }
      uint at = xo + uint(v) * x_step;
)";
        s += "      " + put(t, add) + "\n    }\n  }\n}\n";
        return s;
      },
      a, groups_for(static_cast<std::uint64_t>(columns)));
  flag.defer_index(op, args, 1, std::move(index_copy), dim, x.size[dim]);
}

}  // namespace

void gather_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) { gather_typed(dev, op, args); }

void scatter_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) { scatter_typed(dev, op, args, false); }

void scatter_add_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  scatter_typed(dev, op, args, true);
}

}  // namespace kiln::vk::index
