// The code generator and launcher of every Vulkan reduction (see vk_reduce.h for ReduceSpec).
// Kernels, on the canonical view [outer, extent, inner]:
//   rows     inner == 1 and rows of at least kRowsMinExtent: a workgroup per row (or per fixed
//            chunk of a row); each thread folds a strided, coalesced slice (four elements a
//            load for aligned rows of f32 or 16-bit floats), then a tree in shared
//            memory (subgroup operations first where the device has them) merges the threads.
//   cols     otherwise: a thread per output (or per fixed chunk of its extent) folds its column
//            serially; neighbouring threads read neighbouring addresses along inner.
//   combine  after a split: merges each output's partials in chunk order (a thread per output,
//            or a workgroup per output when there are many partials).
//   rewrite  after a split of an along-dim op (softmax): writes every element from its row's
//            merged accumulator.
//   row_regs softmax rows of at most kRowRegsMax elements (vector-aligned) on devices with
//            subgroup arithmetic: a subgroup (rows of up to 32 x the subgroup size) or else a
//            workgroup holds a row in registers, takes its max and its sum of exp(x - max)
//            with subgroupMax / subgroupAdd, and writes it (two passes over registers, one
//            read and one write of memory).
// A row or column is split when one kernel would leave a large GPU idle (a sum of 16M elements
// becomes 1024 workgroups and one combine). The split factor depends only on the shape, and
// every merge happens in a fixed tree, so results never depend on timing.
#include <algorithm>
#include <cctype>
#include <mutex>
#include <unordered_map>

#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::reduce {

namespace {

constexpr std::uint32_t kGroup = 256;          // threads per workgroup (a power of two)
constexpr std::uint32_t kRowsMinExtent = 64;   // shorter rows: a thread per output
constexpr std::uint32_t kRowChunk = 4096;      // least elements per workgroup of a split row
constexpr std::uint64_t kTargetGroups = 1024;  // workgroups that keep a large GPU busy
constexpr std::uint64_t kTargetThreads = 1 << 16;
constexpr std::uint32_t kColChunk = 64;  // least rows per thread of a split column
constexpr std::uint32_t kMaxSplits = 1024;
constexpr std::uint32_t kCombineGroupMin = 32;  // more partials per output: a workgroup each
constexpr std::uint32_t kRowRegsVec4s = 8;                   // row_regs: at most 8 vec4s per thread
constexpr std::uint32_t kRowRegsMax = 4 * kGroup * kRowRegsVec4s;  // so rows of at most 8192

enum class Mode { rows, cols, combine_thread, combine_group, rewrite, row_regs };

// A row_regs kernel: vec4s per thread, and a subgroup per row (else a workgroup).
struct RowRegs {
  std::uint32_t vec4s = 1;
  bool per_subgroup = false;
};

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::rows: return "rows";
    case Mode::cols: return "cols";
    case Mode::combine_thread: return "combine_thread";
    case Mode::combine_group: return "combine_group";
    case Mode::rewrite: return "rewrite";
    case Mode::row_regs: return "row_regs";
  }
  return "?";
}

// The subgroup size of compute shaders where they have subgroup arithmetic
// (GL_KHR_shader_subgroup_arithmetic), else 0; per device. Kernels are SPIR-V 1.5 and ask for no
// varying size, so a shader's gl_SubgroupSize is this value.
std::uint32_t arithmetic_subgroup_size(const VulkanDevice& dev) {
  static std::mutex mutex;
  static std::unordered_map<VkPhysicalDevice, std::uint32_t> known;
  std::lock_guard lock(mutex);
  const VkPhysicalDevice pd = dev.context().physical();
  if (auto it = known.find(pd); it != known.end()) return it->second;
  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p.pNext = &sg;
  vkGetPhysicalDeviceProperties2(pd, &p);
  const VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  const bool ok = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sg.supportedOperations & need) == need &&
                  sg.subgroupSize >= 4 && kGroup % sg.subgroupSize == 0;
  const std::uint32_t size = ok ? sg.subgroupSize : 0;
  known.emplace(pd, size);
  return size;
}

bool has_subgroup_arithmetic(const VulkanDevice& dev) { return arithmetic_subgroup_size(dev) != 0; }

// Merges the workgroup's accumulators (threads in order); every thread gets the result.
constexpr const char* kWorkgroupReduce = R"(
shared ACC red[WG];
ACC wg_reduce(ACC v) {
  uint lid = gl_LocalInvocationID.x;
#ifdef SUBGROUP_REDUCE
  v = SUBGROUP_REDUCE(v);
  if (subgroupElect()) red[gl_SubgroupID] = v;
  barrier();
  uint parts = gl_NumSubgroups;
  if (parts <= gl_SubgroupSize) {
    if (gl_SubgroupID == 0u) {
      ACC w = gl_SubgroupInvocationID < parts ? red[gl_SubgroupInvocationID] : acc_identity();
      w = SUBGROUP_REDUCE(w);
      if (subgroupElect()) red[0] = w;
    }
    barrier();
    parts = 1u;
  }
#else
  red[lid] = v;
  barrier();
  uint parts = WG;
#endif
  for (uint s = parts / 2u; s > 0u; s >>= 1) {
    if (lid < s) red[lid] = acc_merge(red[lid], red[lid + s]);
    barrier();
  }
  ACC r = red[0];
  barrier();
  return r;
}
)";

// row_regs (see the top): the row's max and sum reach every thread of it. With a workgroup per
// row, every thread merges the subgroups' results itself, in subgroup order (a fixed order).
constexpr const char* kRowRegs = R"(
#ifdef ROW_PER_SUBGROUP
// A subgroup per row: no barriers at all.
#define ROW_LANES gl_SubgroupSize
#define ROW_LANE gl_SubgroupInvocationID
#define ROW_FIRST (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID)
#define ROW_STEP (gl_NumWorkGroups.x * gl_NumSubgroups)
#define ROW_MAX(v) subgroupMax(v)
#define ROW_SUM(v) subgroupAdd(v)
#else
#define ROW_LANES WG
#define ROW_LANE gl_LocalInvocationID.x
#define ROW_FIRST gl_WorkGroupID.x
#define ROW_STEP gl_NumWorkGroups.x
#define ROW_MAX(v) wg_max(v)
#define ROW_SUM(v) wg_sum(v)
shared float red_f[WG];
float wg_max(float v) {
  v = subgroupMax(v);
  if (subgroupElect()) red_f[gl_SubgroupID] = v;
  barrier();
  float r = red_f[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) r = max(r, red_f[i]);
  barrier();
  return r;
}
float wg_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) red_f[gl_SubgroupID] = v;
  barrier();
  float r = red_f[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) r += red_f[i];
  barrier();
  return r;
}
#endif
layout(local_size_x = WG) in;
void main() {
#ifdef FUSED
  fused_init();
#endif
  uint outer = arg_u32(3), extent = arg_u32(4);
  uint lane = ROW_LANE;
  for (uint o = ROW_FIRST; o < outer; o += ROW_STEP) {
    uint base = o * extent;
    vec4 v[ROW_VEC4S];
    // A NaN makes the sum, and so every element, NaN whether or not max() keeps it; an
    // infinite max gives exp(inf - inf) = NaN likewise, as torch does.
    float m = -kiln_inf();
    [[unroll]] for (uint j = 0u; j < ROW_VEC4S; ++j) {
      uint r = 4u * (lane + j * ROW_LANES);
      v[j] = vec4(-kiln_inf());
      if (r < extent) v[j] = load_x4(base + r);
      m = max(m, max(max(v[j].x, v[j].y), max(v[j].z, v[j].w)));
    }
    m = ROW_MAX(m);
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < ROW_VEC4S; ++j) {
      uint r = 4u * (lane + j * ROW_LANES);
      if (r < extent) s += (kiln_exp(v[j].x - m) + kiln_exp(v[j].y - m)) + (kiln_exp(v[j].z - m) + kiln_exp(v[j].w - m));
    }
    s = ROW_SUM(s);
    [[unroll]] for (uint j = 0u; j < ROW_VEC4S; ++j) {
      uint r = 4u * (lane + j * ROW_LANES);
      if (r < extent)
        put_y4(base + r, vec4(row_rewrite(v[j].x, m, s), row_rewrite(v[j].y, m, s), row_rewrite(v[j].z, m, s),
                              row_rewrite(v[j].w, m, s)));
    }
  }
}
)";

constexpr const char* kMain = R"(
layout(local_size_x = WG) in;
void main() {
  xs = XP(arg_u64(0));
  ys = YP(arg_u64(1));
  part = AccBuf(arg_u64(2));
#ifdef FUSED
  fused_init();
#endif
  uint outer = arg_u32(3), extent = arg_u32(4), inner = arg_u32(5), chunk = arg_u32(6), splits = arg_u32(7);
  uint outputs = outer * inner;
#if defined(MODE_ROWS)
  uint lid = gl_LocalInvocationID.x;
  for (uint g = gl_WorkGroupID.x; g < outer * splits; g += gl_NumWorkGroups.x) {
    uint o = g / splits, s = g - o * splits;
    uint r0 = s * chunk, r1 = min(extent, r0 + chunk), base = o * extent;
    ACC acc = acc_identity();
#ifdef VEC4
    for (uint r = r0 + 4u * lid; r < r1; r += 4u * WG) {
      vec4 v = load_x4(base + r);
      acc = acc_step(acc, v.x, r);
      acc = acc_step(acc, v.y, r + 1u);
      acc = acc_step(acc, v.z, r + 2u);
      acc = acc_step(acc, v.w, r + 3u);
    }
#else
    for (uint r = r0 + lid; r < r1; r += WG) acc = acc_step(acc, load_x(base + r), r);
#endif
    acc = wg_reduce(acc);
    if (splits > 1u) {
      if (lid == 0u) part.v[s * outputs + o] = acc;
    } else {
#if defined(REWRITE) && defined(VEC4)
      for (uint r = 4u * lid; r < extent; r += 4u * WG) {
        vec4 v = load_x4(base + r);
        put_y4(base + r, vec4(acc_rewrite(v.x, acc), acc_rewrite(v.y, acc), acc_rewrite(v.z, acc), acc_rewrite(v.w, acc)));
      }
#elif defined(REWRITE)
      for (uint r = lid; r < extent; r += WG) put_y(base + r, acc_rewrite(load_x(base + r), acc));
#else
      if (lid == 0u) finish_y(o, acc);
#endif
    }
  }
#elif defined(MODE_COLS)
  KILN_FOR_EACH(t, outputs * splits) {
    uint s = t / outputs, k = t - s * outputs;
    uint o = k / inner, i = k - o * inner;
    uint r0 = s * chunk, r1 = min(extent, r0 + chunk), base = o * extent * inner + i;
    ACC acc = acc_identity();
    for (uint r = r0; r < r1; ++r) acc = acc_step(acc, load_x(base + r * inner), r);
    if (splits > 1u) {
      part.v[t] = acc;
    } else {
#ifdef REWRITE
      for (uint r = 0u; r < extent; ++r) put_y(base + r * inner, acc_rewrite(load_x(base + r * inner), acc));
#else
      finish_y(k, acc);
#endif
    }
  }
#elif defined(MODE_COMBINE_THREAD)
  KILN_FOR_EACH(k, outputs) {
    ACC acc = part.v[k];
    for (uint s = 1u; s < splits; ++s) acc = acc_merge(acc, part.v[s * outputs + k]);
#ifdef REWRITE
    part.v[k] = acc;
#else
    finish_y(k, acc);
#endif
  }
#elif defined(MODE_COMBINE_GROUP)
  uint lid = gl_LocalInvocationID.x;
  for (uint k = gl_WorkGroupID.x; k < outputs; k += gl_NumWorkGroups.x) {
    ACC acc = acc_identity();
    for (uint s = lid; s < splits; s += WG) acc = acc_merge(acc, part.v[s * outputs + k]);
    acc = wg_reduce(acc);
    if (lid == 0u) {
#ifdef REWRITE
      part.v[k] = acc;
#else
      finish_y(k, acc);
#endif
    }
  }
#elif defined(MODE_REWRITE)
  uint slab = extent * inner;
  for (uint o = gl_WorkGroupID.y; o < outer; o += gl_NumWorkGroups.y) {
    KILN_FOR_EACH(t, slab) {
      uint i = inner == 1u ? 0u : t % inner;
      uint idx = o * slab + t;
      put_y(idx, acc_rewrite(load_x(idx), part.v[o * inner + i]));
    }
  }
#endif
}
)";

// Where a value meets memory: the input's load (or a fused prologue) and the result's store (or
// a fused epilogue).
std::string access_functions(const ReduceSpec& spec, bool vec4, const ReduceFusion* fusion) {
  const bool prologue = fusion && fusion->prologue;
  std::string s;
  if (fusion) {
    s += "#define FUSED 1\n";
    s += fusion->glsl();
  }
  s += prologue ? "XT load_x(uint i) { return prologue(i); }\n"
                : "XT load_x(uint i) { return " + glsl_load(spec.in, "xs", "i") + "; }\n";
  if (vec4) {
    // Under a prologue the four elements are computed in place (from vector loads where the
    // prologue allows); the order of the steps stays.
    std::string four = glsl_load4(spec.in, "arg_u64(0)", "i >> 2");
    if (fusion && fusion->vector_prologue) four = "prologue4(i)";
    else if (prologue) four = "vec4(prologue(i), prologue(i + 1u), prologue(i + 2u), prologue(i + 3u))";
    s += "vec4 load_x4(uint i) { return " + four + "; }\n";
  }
  s += "void store_y(uint i, YT v) { " + glsl_store(spec.out, "ys", "i", "v") + " }\n";
  if (spec.rewrite) {
    // Every element of the output: stored, and under an epilogue handed to it.
    s += "void put_y(uint i, YT v) {\n";
    if (!fusion || fusion->store_result) s += "  store_y(i, v);\n";
    if (fusion && fusion->epilogue) s += "  epilogue(i, v);\n";
    s += "}\n";
    if (vec4) {
      const bool per_element = fusion && fusion->epilogue;
      s += per_element ? "void put_y4(uint i, vec4 v) { put_y(i, v.x); put_y(i + 1u, v.y); put_y(i + 2u, v.z); "
                         "put_y(i + 3u, v.w); }\n"
                       : "void put_y4(uint i, vec4 v) { " + glsl_store4(spec.out, "arg_u64(1)", "i >> 2", "v") + " }\n";
    }
    return s;
  }
  s += "void finish_y(uint k, ACC a) {\n  YT y = acc_finish(a);\n";
  if (!fusion || fusion->store_result) s += "  store_y(k, y);\n";
  if (fusion && fusion->epilogue) s += "  epilogue(k, y);\n";
  s += "}\n";
  return s;
}

std::string source(const VulkanDevice& dev, const ReduceSpec& spec, Mode mode, bool subgroups, bool vec4,
                   const ReduceFusion* fusion, RowRegs row) {
  std::string s = dev.prelude();
  if (subgroups) {
    // Extensions go with the others, before any declaration.
    s.insert(s.find('\n') + 1,
             "#extension GL_KHR_shader_subgroup_basic : require\n"
             "#extension GL_KHR_shader_subgroup_arithmetic : require\n");
  }
  std::string mode_macro = mode_name(mode);
  std::transform(mode_macro.begin(), mode_macro.end(), mode_macro.begin(),
                 [](char c) { return static_cast<char>(std::toupper(c)); });
  s += "#define WG " + std::to_string(kGroup) + "u\n";
  s += std::string("#define XT ") + glsl_value_type(spec.in) + "\n#define YT " + glsl_value_type(spec.out) + "\n";
  s += std::string("#define XP ") + glsl_pointer_type(spec.in) + "\n#define YP " + glsl_pointer_type(spec.out) + "\n";
  s += "#define ACC " + spec.acc + "\n#define MODE_" + mode_macro + " 1\n";
  if (spec.rewrite) s += "#define REWRITE 1\n";
  if (vec4) s += "#define VEC4 1\n";
  // A vector prologue's function is there in every mode (and uses the vector types).
  if (vec4 || (fusion && fusion->vector_prologue))
    s += glsl_vector_types(is_half(spec.in) || is_half(spec.out) || (fusion && fusion->half));
  if (subgroups) s += "#define SUBGROUP_REDUCE(v) " + spec.subgroup + "\n";
  s += spec.acc_decl;
  s += "layout(buffer_reference, std430, buffer_reference_align = 8) buffer AccBuf { ACC v[]; };\n";
  s += "XP xs;\nYP ys;\nAccBuf part;\n";
  s += "float kiln_p(uint j) { return arg_f32(8u + j); }\n";
  s += spec.functions;
  s += access_functions(spec, vec4, fusion);
  if (mode == Mode::row_regs) {
    s.insert(s.find('\n') + 1, "#extension GL_EXT_control_flow_attributes : require\n");
    s += spec.row_rewrite;
    s += "#define ROW_VEC4S ";
    s += std::to_string(row.vec4s);
    s += "u\n";
    if (row.per_subgroup) s += "#define ROW_PER_SUBGROUP 1\n";
    s += kRowRegs;
    return s;
  }
  if (mode == Mode::rows || mode == Mode::combine_group) s += kWorkgroupReduce;
  s += kMain;
  return s;
}

void launch_mode(VulkanDevice& dev, const char* name, const ReduceSpec& spec, Mode mode, const LaunchArgs& args,
                 Groups groups, const ReduceFusion* fusion, bool vec4 = false, RowRegs row = {}) {
  const bool subgroups = mode == Mode::row_regs || (!spec.subgroup.empty() &&
                                                    (mode == Mode::rows || mode == Mode::combine_group) &&
                                                    has_subgroup_arithmetic(dev));
  std::string key = std::string("reduce/") + spec.key + "/" + dtype_name(spec.in) + ">" + dtype_name(spec.out) +
                    (spec.rewrite ? "/rewrite/" : "/") + mode_name(mode) + (subgroups ? "/sg" : "") + (vec4 ? "/v4" : "");
  if (mode == Mode::row_regs) {
    key += row.per_subgroup ? "/sr" : "/r";
    key += std::to_string(row.vec4s);
  }
  if (fusion) {
    key += fusion->vector_prologue ? "/fused4/" : "/fused/";
    key += fusion->key;
  }
  dev.launch(
      key, name, [&] { return source(dev, spec, mode, subgroups, vec4, fusion, row); }, args, groups);
}

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) { return static_cast<std::uint32_t>((a + b - 1) / b); }
std::uint32_t capped(std::uint64_t groups) {
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(groups, 1, 65535));
}

}  // namespace

void run_reduction(VulkanDevice& dev, const char* name, const ReduceSpec& spec, const Buffer* x, const Buffer* y,
                   const Geometry& g, const ReduceFusion* fusion) {
  const std::uint64_t outputs = g.outputs();
  if (outputs == 0 || (spec.rewrite && g.extent == 0)) return;
  const bool rows = g.inner == 1 && g.extent >= kRowsMinExtent;
  std::uint32_t splits = 1;
  if (rows && g.outer < kTargetGroups)
    splits = std::min<std::uint64_t>({ceil_div(g.extent, kRowChunk), ceil_div(kTargetGroups, g.outer), kMaxSplits});
  else if (!rows && outputs < kTargetThreads)
    splits = std::min<std::uint64_t>({ceil_div(g.extent, kColChunk), ceil_div(kTargetThreads, outputs), kMaxSplits});
  splits = std::max<std::uint32_t>(splits, 1);
  // Rows of f32 or 16-bit floats whose every chunk starts aligned to four elements load four at
  // a time (what reaches memory bandwidth on NVIDIA); the accumulation order stays fixed by the
  // shape. A prologue (x null) takes the same order, so a fused sum adds as the unfused one does.
  const std::size_t in4 = vector4_bytes(spec.in), out4 = vector4_bytes(spec.out);
  const bool vec4 = rows && in4 && g.extent % 4 == 0 && address_or_null(x) % in4 == 0 &&
                    (!spec.rewrite || (out4 && address_or_null(y) % out4 == 0));
  std::uint32_t chunk = std::max<std::uint32_t>(ceil_div(g.extent, splits), 1);
  if (vec4) chunk = (chunk + 3) / 4 * 4;
  splits = std::max<std::uint32_t>(ceil_div(g.extent, chunk), 1);

  BufferPtr partials;
  if (splits > 1) partials = dev.memory().allocate(static_cast<std::size_t>(outputs * splits * spec.acc_bytes));
  LaunchArgs a;
  a.u64(address_or_null(x)).u64(address_or_null(y)).u64(partials ? VulkanDevice::address(*partials) : 0);
  a.u32(g.outer).u32(g.extent).u32(g.inner).u32(chunk).u32(splits);
  for (float p : spec.params) a.f32(p);
  if (fusion)
    for (std::uint64_t w : fusion->args.words()) a.u64(w);

  const bool row_regs = rows && vec4 && splits == 1 && !spec.row_rewrite.empty() && g.extent <= kRowRegsMax;
  if (const std::uint32_t sg = row_regs ? arithmetic_subgroup_size(dev) : 0) {
    // A subgroup per row while a row fits its registers, else a workgroup; registers per
    // thread in powers of two, so that few pipelines cover every row length.
    RowRegs row;
    row.per_subgroup = g.extent <= 4 * sg * kRowRegsVec4s;
    const std::uint32_t lanes = row.per_subgroup ? sg : kGroup;
    while (row.vec4s * 4 * lanes < g.extent) row.vec4s *= 2;
    const std::uint64_t groups = row.per_subgroup ? ceil_div(outputs, kGroup / sg) : outputs;
    launch_mode(dev, name, spec, Mode::row_regs, a, {capped(groups), 1, 1}, fusion, vec4, row);
    return;
  }
  if (rows)
    launch_mode(dev, name, spec, Mode::rows, a, {capped(outputs * splits), 1, 1}, fusion, vec4);
  else
    launch_mode(dev, name, spec, Mode::cols, a, groups_for(outputs * splits, kGroup), fusion);
  if (splits == 1) return;
  if (splits > kCombineGroupMin)
    launch_mode(dev, name, spec, Mode::combine_group, a, {capped(outputs), 1, 1}, fusion);
  else
    launch_mode(dev, name, spec, Mode::combine_thread, a, groups_for(outputs, kGroup), fusion);
  if (spec.rewrite) {
    const std::uint64_t slab = std::uint64_t{g.extent} * g.inner;
    launch_mode(dev, name, spec, Mode::rewrite, a, {groups_for(slab, kGroup)[0], capped(g.outer), 1}, fusion);
  }
}

std::string as_float(DType t, const std::string& e) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return e;  // 16-bit floats are held as f32
    case DType::i64: return "float(" + e + ")";
    case DType::bool_: return "((" + e + ") ? 1.0 : 0.0)";
    default: throw Error("vulkan", std::string("reductions do not support dtype ") + dtype_name(t));
  }
}

std::string truth(DType t, const std::string& e) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "!((" + e + ") == 0.0)";  // NaN is true
    case DType::i64: return "((" + e + ") != 0l)";
    case DType::bool_: return e;
    default: throw Error("vulkan", std::string("reductions do not support dtype ") + dtype_name(t));
  }
}

}  // namespace kiln::vk::reduce
