// sort and topk on Vulkan. Every element becomes a (key, position) pair: the key is an unsigned
// integer whose order is the value order (f32: NaN above +inf, -0 equal to +0; descending: the
// key inverted) and ties are broken by position, which makes the order total and the result
// stable like the CPU's (ties keep their index order, for descending too). Pairs are ordered by
// a bitonic network, padded to a power of two with pairs that sort last:
//  - slices of up to kMaxShared elements sort in shared memory, several short slices per
//    workgroup, one dispatch in all;
//  - longer slices run the same network in global scratch memory, one dispatch per step.
// Values are written back from the input at the sorted positions; every read of a slice comes
// before any write of it, so the values output may share the input's buffer.
#include <algorithm>
#include <bit>

#include "kiln/devices/vulkan/vk_index.h"
#include "kiln/ops/attrs_index.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::index {
namespace {

constexpr std::uint32_t kThreads = 256;
constexpr std::uint32_t kMaxShared = 2048;  // elements of one workgroup (12 bytes each)
constexpr std::uint32_t kMinGroup = 512;    // short slices are batched up to this many elements

// GLSL: uint64_t kiln_sort_key(raw value) for dtype t, ascending or descending.
std::string key_function(DType t, bool descending) {
  std::string s;
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      // 16-bit floats are ordered by their exact f32 value.
      s = "uint64_t kiln_sort_key(uint raw) {\n  uint b = ";
      s += t == DType::f32 ? "raw" : t == DType::f16 ? "floatBitsToUint(kiln_f16_to_f32(raw))" : "raw << 16";
      s += R"(;
  uint k;
  if ((b & 0x7fffffffu) > 0x7f800000u) k = 0xffffffffu;
  else if ((b & 0x7fffffffu) == 0u) k = 0x80000000u;
  else k = (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
)";
      s += descending ? "  return uint64_t(~k);\n}\n" : "  return uint64_t(k);\n}\n";
      return s;
    case DType::i64:
      s = "uint64_t kiln_sort_key(int64_t v) {\n  uint64_t k = uint64_t(v) ^ 0x8000000000000000ul;\n";
      s += descending ? "  return ~k;\n}\n" : "  return k;\n}\n";
      return s;
    default:
      return std::string("uint64_t kiln_sort_key(uint b) { return uint64_t(") + (descending ? "1u - b" : "b") +
             "); }\n";
  }
}

// GLSL common to both paths: the slice layout (slice s = (o, i): element p at
// o * size * inner + i + p * inner) and the order of pairs.
std::string common_source(const VulkanDevice& dev, DType t, bool descending) {
  std::string s = dev.prelude() + glsl_fast_div() + key_function(t, descending);
  s += R"(
uint kiln_slice_at(uint s, uint p, uint size, uint inner, uint img, uint ish) {
  uint o = kiln_div(s, img, ish);
  return o * size * inner + (s - o * inner) + p * inner;
}
// Pair (ka, pa) comes after pair (kb, pb).
bool kiln_after(uint64_t ka, uint pa, uint64_t kb, uint pb) { return ka > kb || (ka == kb && pa > pb); }
)";
  return s;
}

struct SortPlan {
  const OpIr* op;
  DType dtype;
  std::size_t elem;
  bool descending;
  std::uint32_t size, inner, slices, kept;
};

void sort_shared(VulkanDevice& dev, const SortPlan& p, const KernelArgs& args, std::uint32_t P, std::uint32_t E) {
  const std::uint32_t G = E / P, batches = (p.slices + G - 1) / G;
  const FastDiv by_inner(p.inner);
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.outputs[0]).buffer(*args.outputs[1]);
  a.u32(p.size).u32(by_inner.d).u32(by_inner.magic).u32(by_inner.shifts).u32(p.slices).u32(p.kept).u32(batches);
  const std::string key = std::string("index/sort_shared/") + dtype_name(p.dtype) + (p.descending ? "/desc" : "/asc") +
                          "/p" + std::to_string(P) + "/e" + std::to_string(E);
  dev.launch(key, op_name(p.op->kind),
             [&] {
               const std::string ptr = raw_pointer_type(p.elem), val = raw_value_type(p.elem);
               std::string s = common_source(dev, p.dtype, p.descending);
               s += "#define P " + std::to_string(P) + "u\n#define E " + std::to_string(E) + "u\n#define LOG2P " +
                    std::to_string(std::countr_zero(P)) + "u\n#define PER " + std::to_string(E / kThreads) + "\n";
               s += R"(layout(local_size_x = 256) in;
shared uint64_t sk[E];
shared uint sp[E];
void main() {
)";
               s += "  " + ptr + " x = " + ptr + "(arg_u64(0));\n  " + ptr + " values = " + ptr + "(arg_u64(1));\n";
               s += R"(  I64s indices = I64s(arg_u64(2));
  uint size = arg_u32(3), inner = arg_u32(4), img = arg_u32(5), ish = arg_u32(6);
  uint slices = arg_u32(7), kept = arg_u32(8), batches = arg_u32(9);
  uint lid = gl_LocalInvocationID.x;
  for (uint b = gl_WorkGroupID.x; b < batches; b += gl_NumWorkGroups.x) {
    for (uint e = lid; e < E; e += 256u) {
      uint s = b * (E / P) + (e >> LOG2P), q = e & (P - 1u);
      uint64_t k = 0xfffffffffffffffful;
      uint pos = 0xffffffffu;
      if (s < slices && q < size) {
)";
               s += "        k = kiln_sort_key(" + raw_load(p.elem, "x", "kiln_slice_at(s, q, size, inner, img, ish)") +
                    ");\n";
               s += R"(        pos = q;
      }
      sk[e] = k;
      sp[e] = pos;
    }
    barrier();
    for (uint kk = 2u; kk <= P; kk <<= 1) {
      for (uint j = kk >> 1; j > 0u; j >>= 1) {
        for (uint t = lid; t < E / 2u; t += 256u) {
          uint i = ((t & ~(j - 1u)) << 1) | (t & (j - 1u));
          uint l = i + j;
          bool ascending = kk == P || (i & kk) == 0u;
          if (kiln_after(sk[i], sp[i], sk[l], sp[l]) == ascending) {
            uint64_t tk = sk[i]; sk[i] = sk[l]; sk[l] = tk;
            uint tp = sp[i]; sp[i] = sp[l]; sp[l] = tp;
          }
        }
        barrier();
      }
    }
    // All reads of the batch's slices, then all writes (the output may be the input).
)";
               s += "    " + val + " v[PER];\n";
               s += R"(    for (uint c = 0u; c < uint(PER); ++c) {
      uint e = lid + c * 256u;
      uint s = b * (E / P) + (e >> LOG2P), q = e & (P - 1u);
      if (s < slices && q < kept)
)";
               s += "        v[c] = " + raw_load(p.elem, "x", "kiln_slice_at(s, sp[e], size, inner, img, ish)") + ";\n";
               s += R"(    }
    barrier();
    for (uint c = 0u; c < uint(PER); ++c) {
      uint e = lid + c * 256u;
      uint s = b * (E / P) + (e >> LOG2P), q = e & (P - 1u);
      if (s < slices && q < kept) {
        uint o = kiln_div(s, img, ish);
        uint at = o * kept * inner + (s - o * inner) + q * inner;
)";
               s += "        " + raw_store(p.elem, "values", "at", "v[c]") + "\n";
               s += R"(        indices.v[at] = int64_t(sp[e]);
      }
    }
    barrier();
  }
}
)";
               return s;
             },
             a, {std::min<std::uint32_t>(batches, 65535), 1, 1});
}

// The same network over global scratch: one dispatch to load, one per (kk, j) step, one to write.
void sort_global(VulkanDevice& dev, const SortPlan& p, const KernelArgs& args, std::uint32_t P) {
  const std::uint64_t total = std::uint64_t{p.slices} * P;
  check_32bit_elements(op_name(p.op->kind), static_cast<std::int64_t>(total));
  BufferPtr keys = dev.memory().allocate(total * 8), positions = dev.memory().allocate(total * 4);
  // The writes of one slice are spread over many workgroups: read from a copy of an input whose
  // buffer is also the values output.
  const Buffer* x = args.inputs[0];
  BufferPtr x_copy;
  if (VulkanDevice::address(*x) == VulkanDevice::address(*args.outputs[0])) {
    x_copy = dev.memory().allocate(p.op->inputs[0].bytes());
    dev.copy(*x, *x_copy, p.op->inputs[0].bytes());
    x = x_copy.get();
  }
  const FastDiv by_inner(p.inner);
  const std::string base = std::string(dtype_name(p.dtype)) + (p.descending ? "/desc" : "/asc");
  const char* name = op_name(p.op->kind);
  const std::string ptr = raw_pointer_type(p.elem);
  const std::string header = R"(layout(local_size_x = 256) in;
void main() {
)" + std::string("  ") + ptr +
                             " x = " + ptr + "(arg_u64(0));\n  " + ptr + " values = " + ptr + R"((arg_u64(1));
  I64s indices = I64s(arg_u64(2));
  I64s keys = I64s(arg_u64(3));
  U32s positions = U32s(arg_u64(4));
  uint size = arg_u32(5), inner = arg_u32(6), img = arg_u32(7), ish = arg_u32(8);
  uint slices = arg_u32(9), kept = arg_u32(10), log2p = arg_u32(11), kk = arg_u32(12), j = arg_u32(13);
  uint P = 1u << log2p;
)";
  auto launch = [&](const std::string& step, const std::string& body, std::uint64_t threads, std::uint32_t kk,
                    std::uint32_t j) {
    LaunchArgs a;
    a.buffer(*x).buffer(*args.outputs[0]).buffer(*args.outputs[1]).buffer(*keys).buffer(*positions);
    a.u32(p.size).u32(by_inner.d).u32(by_inner.magic).u32(by_inner.shifts).u32(p.slices).u32(p.kept);
    a.u32(static_cast<std::uint32_t>(std::countr_zero(P))).u32(kk).u32(j);
    dev.launch(
        "index/sort_global/" + step + "/" + base, name,
        [&] { return common_source(dev, p.dtype, p.descending) + header + body + "}\n"; }, a, groups_for(threads));
  };
  launch("load",
         R"(  KILN_FOR_EACH(e, slices * P) {
    uint s = e >> log2p, q = e & (P - 1u);
    uint64_t k = 0xfffffffffffffffful;
    uint pos = 0xffffffffu;
    if (q < size) {
      k = kiln_sort_key()" +
             raw_load(p.elem, "x", "kiln_slice_at(s, q, size, inner, img, ish)") + R"();
      pos = q;
    }
    keys.v[e] = int64_t(k);
    positions.v[e] = pos;
  }
)",
         total, 0, 0);
  for (std::uint32_t kk = 2; kk <= P; kk <<= 1)
    for (std::uint32_t j = kk >> 1; j > 0; j >>= 1)
      launch("step", R"(  KILN_FOR_EACH(t, slices * (P >> 1)) {
    uint i = ((t & ~(j - 1u)) << 1) | (t & (j - 1u));
    uint l = i + j;
    bool ascending = kk == P || (i & kk) == 0u;
    uint64_t ki = uint64_t(keys.v[i]), kl = uint64_t(keys.v[l]);
    uint pi = positions.v[i], pl = positions.v[l];
    if (kiln_after(ki, pi, kl, pl) == ascending) {
      keys.v[i] = int64_t(kl); keys.v[l] = int64_t(ki);
      positions.v[i] = pl; positions.v[l] = pi;
    }
  }
)",
             total / 2, kk, j);
  launch("write",
         R"(  KILN_FOR_EACH(e, slices * kept) {
    uint s = e / kept, q = e - s * kept;
    uint pos = positions.v[s * P + q];
    uint o = kiln_div(s, img, ish);
    uint at = o * kept * inner + (s - o * inner) + q * inner;
)" + std::string("    ") +
             raw_store(p.elem, "values", "at", raw_load(p.elem, "x", "kiln_slice_at(s, pos, size, inner, img, ish)")) +
             R"(
    indices.v[at] = int64_t(pos);
  }
)",
         std::uint64_t{p.slices} * p.kept, 0, 0);
}

void sort_slices(VulkanDevice& dev, const OpIr& op, const KernelArgs& args, std::int64_t kept, bool descending) {
  const IndexDims x = index_dims(op.inputs[0].shape);
  const int dim = index_op_dim(op, x.rank);
  const std::int64_t size = x.size[dim], inner = x.stride[dim];
  const std::int64_t slices = size == 0 ? 0 : op.inputs[0].numel() / size;
  if (slices == 0 || kept == 0) return;
  check_32bit_elements(op_name(op.kind), op.inputs[0].numel());
  SortPlan p{&op,
             op.inputs[0].dtype,
             dtype_size(op.inputs[0].dtype),
             descending,
             static_cast<std::uint32_t>(size),
             static_cast<std::uint32_t>(inner),
             static_cast<std::uint32_t>(slices),
             static_cast<std::uint32_t>(kept)};
  const std::uint32_t P = std::bit_ceil(static_cast<std::uint32_t>(size));
  // Shared memory holds 12 bytes per element (key and position).
  const std::uint32_t limit = dev.context().limits().maxComputeSharedMemorySize;
  std::uint32_t max_shared = kMaxShared;
  while (max_shared > kThreads && max_shared * 12 > limit) max_shared >>= 1;
  if (P <= max_shared)
    sort_shared(dev, p, args, P, std::max(P, std::min(kMinGroup, max_shared)));
  else
    sort_global(dev, p, args, P);
}

}  // namespace

void sort_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const IndexDims x = index_dims(op.inputs[0].shape);
  sort_slices(dev, op, args, x.size[index_op_dim(op, x.rank)], op.attrs.flag);
}

void topk_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  // largest = true is a descending order
  const TopkAttrs t = TopkAttrs::decode(op);
  sort_slices(dev, op, args, t.k, t.largest);
}

}  // namespace kiln::vk::index
