// The tensor-core matmul with workgroup-scope matrices (VK_NV_cooperative_matrix2): each
// workgroup holds one BM x BN accumulator and, per step of BK, loads a BM x BK tile of A and a
// BK x BN tile of B straight from global memory as workgroup-scope matrices, as plain loads or
// as tensor loads (SPV_NV_tensor_addressing). The driver stages them through shared memory and
// splits the product among its subgroups itself: what the subgroup-scope kernel
// (vk_matmul_coop.cpp) does by hand with registers and barriers, a driver may do with its own
// asynchronous copies and more shared memory than a shader may declare. Written with
// GL_NV_cooperative_matrix, which Debian 12's glslang compiles with a workgroup scope, and turned
// into SPV_KHR_cooperative_matrix (and tensor loads) after validation (vk_spirv_coop.h).
// bf16 operands: the same GLSL with f16 matrices, given a bfloat16 component by the rewrite
// (glslang 12 has no bfloat16 type). Workgroup-scope loads here take no bounds: M, N and K must
// be multiples of the tile (whole tiles only). Same argument block as the tiled kernel
// (vk_matmul.cpp).
#include <algorithm>
#include <string>

#include "kiln/devices/vulkan/vk_coop_api.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/devices/vulkan/vk_shader.h"
#include "kiln/base/log.h"

namespace kiln::vk {

namespace {

constexpr const char* kWorkgroupExtensions = R"(#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
)";

constexpr const char* kCoopWgBody = R"(
// Rows start at multiples of 8 halves (K, N multiples of the tiles): 16-byte aligned.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer MmF16s { float16_t v[]; };
layout(local_size_x = WG) in;
#define LOAD(a, b, k) \
  coopMatLoadNV(a, A.v, m0 * KS + (k), KS, false); \
  coopMatLoadNV(b, B.v, (k) * NS + n0, NS, false);
// One BK step of the product: the A and B tiles at k, multiplied into acc.
#define STEP(k) { LOAD(a, b, k) acc = coopMatMulAddNV(a, b, acc); }

void main() {
  const uint64_t a_base = arg_u64(0), b_base = arg_u64(1), c_base = arg_u64(2);
  const uint M = arg_u32(3), N = arg_u32(4), K = arg_u32(5), batches = arg_u32(6), nb = arg_u32(7);
  const uint tiles_m = M / BM, n0 = gl_WorkGroupID.x * BN;
  // K and N are multiples of the tile; masked, the driver can prove it, so that every row of a
  // tile starts 16-byte aligned. On the H200 this made tensor loads 2.6x faster (4096^3: 0.79
  // against 2.10 ms); plain loads did not change.
  const uint KS = K & ~7u, NS = N & ~7u;
  // Every loop bound is uniform in the workgroup, as workgroup-scope matrices require.
  for (uint bz = gl_WorkGroupID.z; bz < batches; bz += gl_NumWorkGroups.z) {
    uint64_t a_off, b_off;
    mm_batch_offsets(bz, nb, a_off, b_off);
    MmF16s A = MmF16s(a_base + a_off * 2ul);
    MmF16s B = MmF16s(b_base + b_off * 2ul);
    const uint64_t c_addr = c_base + uint64_t(bz) * uint64_t(M) * uint64_t(N) * OUT_SIZE;
    for (uint mt = gl_WorkGroupID.y; mt < tiles_m; mt += gl_NumWorkGroups.y) {
      const uint m0 = mt * BM;
      fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN> acc = fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN>(0.0);
      fcoopmatNV<16, gl_ScopeWorkgroup, BM, BK> a;
      fcoopmatNV<16, gl_ScopeWorkgroup, BK, BN> b;
      uint k0 = 0u;
      // UNROLL steps per trip while they fit, then one at a time (K is a multiple of BK).
      for (; k0 + BK * UNROLL <= K; k0 += BK * UNROLL)
        [[unroll]] for (uint j = 0u; j < UNROLL; ++j) STEP(k0 + j * BK);
#if UNROLL > 1
      for (; k0 < K; k0 += BK) STEP(k0);
#endif
      STORE_TILE(acc, c_addr, m0 * NS + n0, NS);
    }
  }
}
)";

}  // namespace

WgCoopGranularity WgCoopShape::at(std::uint32_t invocations) const {
  if (threads == 0) return {};
  if (invocations == 0 || invocations == threads) return {m, n, k, threads};
  for (const WgCoopGranularity& g : smaller)
    if (g.threads == invocations) return g;
  return {};
}

bool WgCoopConfig::valid_for(const WgCoopShape& s) const {
  // BK differs from BM and BN, so that A, B and the f16 output tile are three matrix types (the
  // SPIR-V rewrite gives each type one use).
  const WgCoopGranularity g = s.at(threads);
  return g.threads != 0 && (s.tensor_loads || !tensor) && bm % g.m == 0 && bn % g.n == 0 && bk % g.k == 0 &&
         bk % 8 == 0 && bn % 8 == 0 && std::max({bm, bn, bk}) <= s.max_dimension && bk != bm && bk != bn;
}

bool WgCoopConfig::takes(std::uint64_t m, std::uint64_t n, std::uint64_t k) const {
  return m % bm == 0 && n % bn == 0 && k % bk == 0 && k > 0;
}

const std::vector<WgCoopConfig>& wg_coop_configs() {
  // Listed fastest first, as measured on an H200 (4096^3, f16 and bf16 alike). The driver gives
  // every configuration all 255 registers and stages one BK step of A and B in shared memory
  // (its pipeline statistics), so what hides the loads' latency is a second workgroup on the
  // SM: 128 x 128 x 64 at 128 invocations (two fit an SM) 0.474-0.493 ms with 4 steps per trip
  // (2 steps 0.489-0.494, 8 steps 0.577-0.606), against 0.52-0.56 for the best at 256
  // invocations (128 x 256 x 32, one per SM). Tensor loads with the strides provably aligned;
  // plain loads 2.07-2.42 in every form. The hand-staged subgroup kernel: 0.82-0.84. Tried, not
  // kept: the next step's tiles loaded before this step's product (2.5 ms), workgroups walking
  // groups of 4 or 8 row tiles (no change), tensor loads as slices of one whole-operand layout
  // (2.7 ms), A and B read through descriptor-bound storage buffers instead of addresses
  // (0.524-0.563 against 0.534-0.553: no change), 128 x 128 x 32 at 256 invocations (0.80).
  static const std::vector<WgCoopConfig> configs = {
      {"wt128x128x64u4t128", 128, 128, 64, true, 4, 128},  // 0.474-0.493 ms
      {"wt128x256x32u8", 128, 256, 32, true, 8},           // 0.52-0.56
      {"wt128x128x32u8t128", 128, 128, 32, true, 8, 128},  // 0.542-0.559
      {"wt128x256x64u4", 128, 256, 64, true, 4},           // 0.55-0.57
      {"wt64x256x32u8t128", 64, 256, 32, true, 8, 128},    // 0.566-0.581
      {"wt256x128x32u8", 256, 128, 32, true, 8},           // 0.59-0.60
      {"wt64x128x32u8t64", 64, 128, 32, true, 8, 64},      // 0.595-0.615
      {"w128x256x32u8", 128, 256, 32, false, 8},           // 2.07-2.42: for drivers without tensor loads
  };
  return configs;
}

std::string wg_coop_matmul_source(const std::string& prelude, const WgCoopShape& shape, const WgCoopConfig& c,
                                  DType operands, DType out) {
  KILN_CHECK(operands == DType::f16 || operands == DType::bf16, "matmul",
             "the workgroup cooperative-matrix kernel takes f16 or bf16 operands");
  KILN_CHECK(out == operands || out == DType::f32, "matmul",
             "the workgroup cooperative-matrix kernel writes its operands' dtype or f32");
  KILN_CHECK(c.valid_for(shape), "matmul", std::string("workgroup cooperative-matrix configuration ") + c.name +
                                               " does not fit the device's granularity");
  std::string s = prelude;
  s.insert(s.find('\n') + 1, kWorkgroupExtensions);
  s += kKhrCooperativeMatrixMarker;
  s += "const uint BM = " + glsl_uint(c.bm) + ", BN = " + glsl_uint(c.bn) + ", BK = " + glsl_uint(c.bk) +
       ", WG = " + glsl_uint(shape.at(c.threads).threads) + ";\n#define UNROLL " + std::to_string(c.unroll) + "\n";
  if (c.tensor) s += kTensorLoadsMarker;
  if (operands == DType::bf16) s += kBf16MatricesMarker;  // written as f16, rewritten
  s += coop_store_glsl("STORE_TILE", "gl_ScopeWorkgroup", "BM", "BN", out);
  s += glsl_matmul_common();
  s += kCoopWgBody;
  return s;
}

WgCoopShape wg_coop_shape(const VulkanDevice& dev, DType operands) {
  const Context& ctx = dev.context();
  if (!ctx.info().coop_matrix_workgroup) return {};
  if (operands == DType::bf16 && !ctx.info().coop_matrix_bf16) return {};
  if (operands != DType::f16 && operands != DType::bf16) return {};
  const VkComponentTypeNV input = operands == DType::f16 ? VK_COMPONENT_TYPE_FLOAT16_NV : kComponentTypeBfloat16;
  Coop2PropertiesNv props;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &props;
  vkGetPhysicalDeviceProperties2(ctx.physical(), &p2);
  auto query = reinterpret_cast<PfnFlexibleDimensionsNv>(vkGetInstanceProcAddr(
      ctx.instance().handle(), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (!query) return {};
  std::uint32_t n = 0;
  if (query(ctx.physical(), &n, nullptr) != VK_SUCCESS || n == 0) return {};
  std::vector<FlexibleDimensionsNv> entries(n);
  if (query(ctx.physical(), &n, entries.data()) != VK_SUCCESS) return {};
  // operands x operands -> f32 at workgroup scope, within the device's limits.
  WgCoopShape best;
  std::vector<WgCoopGranularity> sizes;
  std::string listed;
  const auto& limits = ctx.limits();
  for (const auto& e : entries) {
    for (std::uint32_t v : {e.MGranularity, e.NGranularity, e.KGranularity}) {
      listed += ' ';
      listed += std::to_string(v);
    }
    for (std::uint32_t v : {static_cast<std::uint32_t>(e.AType), static_cast<std::uint32_t>(e.BType),
                            static_cast<std::uint32_t>(e.CType), static_cast<std::uint32_t>(e.ResultType)}) {
      listed += ',';
      listed += std::to_string(v);
    }
    listed += ", scope ";
    listed += std::to_string(e.scope);
    listed += ", threads ";
    listed += std::to_string(e.workgroupInvocations);
    listed += ';';
    if (e.AType != input || e.BType != input ||
        e.CType != VK_COMPONENT_TYPE_FLOAT32_NV || e.ResultType != VK_COMPONENT_TYPE_FLOAT32_NV ||
        e.scope != VK_SCOPE_WORKGROUP_NV || e.saturatingAccumulation)
      continue;
    const std::uint32_t threads = e.workgroupInvocations;
    if (threads == 0 || threads > limits.maxComputeWorkGroupInvocations || threads > limits.maxComputeWorkGroupSize[0] ||
        threads > props.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize)
      continue;
    sizes.push_back({e.MGranularity, e.NGranularity, e.KGranularity, threads});
  }
  // The most invocations (more subgroups to share a tile) by default; some smaller sizes beside.
  std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.threads > b.threads; });
  std::size_t smaller = 0;
  for (const WgCoopGranularity& g : sizes) {
    const std::uint32_t last = smaller ? best.smaller[smaller - 1].threads : best.threads;
    if (best.threads == 0)
      best = WgCoopShape{g.m, g.n, g.k, g.threads, props.cooperativeMatrixFlexibleDimensionsMaxDimension,
                         ctx.info().coop_matrix_tensor_loads};
    else if (g.threads < last && smaller < best.smaller.size())  // one entry per size
      best.smaller[smaller++] = g;
  }
  if (log_enabled(spdlog::level::debug) && operands == DType::f16)
    logger().debug("vulkan workgroup cooperative matrix: max workgroup {}, max dimension {}, reserved shared {} B; "
                   "granularity M N K, types A B C result:{}",
                   props.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize,
                   props.cooperativeMatrixFlexibleDimensionsMaxDimension,
                   props.cooperativeMatrixWorkgroupScopeReservedSharedMemory, listed);
  if (best.m == 0 || best.n == 0 || best.k == 0) return {};
  return best;
}

}  // namespace kiln::vk
