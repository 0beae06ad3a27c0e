// The tensor-core matmul: f16 operands, f32 accumulators, through GL_NV_cooperative_matrix.
//
// A workgroup of WM x WN subgroups (of 32 invocations) computes a BM x BN tile of C; each
// subgroup owns a (BM / WM) x (BN / WN) part of it as CR x CC accumulator matrices of the
// device's shape (16 x 16 or 16 x 8). Per step of BK, every invocation loads 16-byte words of
// the A and B tiles into registers and stores them to shared memory (rows padded by 16 bytes, so
// that the 8 rows one matrix load touches fall in distinct banks); the next step's words are
// loaded while the subgroups multiply from shared memory. With two stages the shared tiles are
// double-buffered: the next step is stored beside the one being read, one barrier per step.
// Rows, columns and k beyond the matrix read as 0 (K and N must be multiples of 8: whole words).
// Accumulators inside the matrix are stored directly (converted to f16 where the output is);
// those on the edges go through a per-subgroup block of shared memory and are stored element by
// element. Same argument block as the tiled kernel (vk_matmul.cpp). With a gather (the implicit
// GEMM of a convolution) B's words are assembled element by element from the image.
#include <algorithm>
#include <string>

#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/devices/vulkan/vk_shader.h"
#include "kiln/base/log.h"

namespace kiln::vk {

namespace {

constexpr const char* kExtensions = R"(#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
)";

constexpr const char* kCoopBody = R"(
#ifdef MM_GATHER_B
// Word j of a step always covers the same columns of the tile: their windows are found once.
#define MM_LOAD_B(k, col, j) mm_gather_b8(b_gather, k, col, N, gather_cols[j])
#else
#define MM_LOAD_B(k, col, j) B.v[((k) * N + (col)) >> 3]
#endif
layout(buffer_reference, std430, buffer_reference_align = 16) buffer MmU32x4s { uvec4 v[]; };
const uint WG = WM * WN * 32u;
const uint CR = BM / WM / LM, CC = BN / WN / LN;
const uint SA = BK / 8u + 1u, SB = BN / 8u + 1u;  // 16-byte words per shared row, one of padding
const uint A_WORDS = BM * SA, STAGE_WORDS = A_WORDS + BK * SB;
const uint AV = BM * BK / 8u / WG, BV = BK * BN / 8u / WG;  // words per invocation and step
layout(local_size_x = WG) in;
// The shared tiles, as 16-byte words (the matrix loads take offsets and strides in words; f16
// arrays, stored 2 bytes at a time, measured 15-40% slower on an H200); the edge blocks reuse them.
shared uvec4 Sh[SHARED_WORDS];

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, LM, LN>
// The words of the A and B tiles of step k0 into registers ra, rb (0 outside the matrices).
#define LOAD_STEP(k0) { \
  [[unroll]] for (uint j = 0u; j < AV; ++j) { \
    const uint e = tid + j * WG, row = m0 + e / (BK / 8u), k = (k0) + (e % (BK / 8u)) * 8u; \
    ra[j] = uvec4(0u); \
    if (row < M && k < K) ra[j] = A.v[(row * K + k) >> 3]; \
  } \
  [[unroll]] for (uint j = 0u; j < BV; ++j) { \
    const uint e = tid + j * WG, k = (k0) + e / (BN / 8u), col = n0 + (e % (BN / 8u)) * 8u; \
    rb[j] = uvec4(0u); \
    if (k < K && col < N) rb[j] = MM_LOAD_B(k, col, j); \
  } }
// ra, rb into the shared stage at word `base`.
#define STORE_STEP(base) { \
  [[unroll]] for (uint j = 0u; j < AV; ++j) { \
    const uint e = tid + j * WG; \
    Sh[(base) + (e / (BK / 8u)) * SA + e % (BK / 8u)] = ra[j]; \
  } \
  [[unroll]] for (uint j = 0u; j < BV; ++j) { \
    const uint e = tid + j * WG; \
    Sh[(base) + A_WORDS + (e / (BN / 8u)) * SB + e % (BN / 8u)] = rb[j]; \
  } }
// The subgroup's products of the shared stage at word `base`.
#define MATH(base) { \
  [[unroll]] for (uint kk = 0u; kk < BK / LK; ++kk) { \
    fcoopmatNV<16, gl_ScopeSubgroup, LM, LK> a[CR]; \
    [[unroll]] for (uint i = 0u; i < CR; ++i) \
      coopMatLoadNV(a[i], Sh, (base) + (wm * CR + i) * LM * SA + kk * (LK / 8u), SA, false); \
    [[unroll]] for (uint j = 0u; j < CC; ++j) { \
      fcoopmatNV<16, gl_ScopeSubgroup, LK, LN> b; \
      coopMatLoadNV(b, Sh, (base) + A_WORDS + kk * LK * SB + (wn * CC + j) * (LN / 8u), SB, false); \
      [[unroll]] for (uint i = 0u; i < CR; ++i) acc[i][j] = coopMatMulAddNV(a[i], b, acc[i][j]); \
    } \
  } }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = warp / WN, wn = warp % WN;
  const uint64_t a_base = arg_u64(0), b_base = arg_u64(1), c_base = arg_u64(2);
  const uint M = arg_u32(3), N = arg_u32(4), K = arg_u32(5), batches = arg_u32(6), nb = arg_u32(7);
#ifdef MM_GATHER_B
  mm_hooks_init();
#endif
  const uint tiles_m = (M + BM - 1u) / BM;
  const uint n0 = gl_WorkGroupID.x * BN;
#ifdef MM_GATHER_B
  uvec3 gather_cols[BV];
  [[unroll]] for (uint j = 0u; j < BV; ++j) gather_cols[j] = mm_gather_window(n0 + ((tid + j * WG) % (BN / 8u)) * 8u);
#endif
  for (uint bz = gl_WorkGroupID.z; bz < batches; bz += gl_NumWorkGroups.z) {
    uint64_t a_off, b_off;
    mm_batch_offsets(bz, nb, a_off, b_off);
    MmU32x4s A = MmU32x4s(a_base + a_off * 2ul);
    MmU32x4s B = MmU32x4s(b_base + b_off * 2ul);
#ifdef MM_GATHER_B
    const uint64_t b_gather = b_base + b_off * 2ul;
#endif
    const uint64_t c_addr = c_base + uint64_t(bz) * uint64_t(M) * uint64_t(N) * OUT_SIZE;
    for (uint mt = gl_WorkGroupID.y; mt < tiles_m; mt += gl_NumWorkGroups.y) {
      const uint m0 = mt * BM;
      const bool edge = m0 + BM > M || n0 + BN > N;  // uniform in the workgroup
      ACC acc[CR][CC];
      [[unroll]] for (uint i = 0u; i < CR; ++i)
        [[unroll]] for (uint j = 0u; j < CC; ++j) acc[i][j] = ACC(0.0);
      uvec4 ra[AV], rb[BV];
      LOAD_STEP(0u);
#if STAGES == 2
      barrier();  // the previous tile's edge stores have finished with shared memory
      STORE_STEP(0u);
      barrier();
      for (uint k0 = 0u; k0 < K; k0 += 2u * BK) {
        STEP2(k0, 0u, STAGE_WORDS);
        if (k0 + BK >= K) break;
        STEP2(k0 + BK, STAGE_WORDS, 0u);
      }
#else
      for (uint k0 = 0u; k0 < K; k0 += BK) {
        barrier();  // the previous step (or tile) has finished reading shared memory
        STORE_STEP(0u);
        barrier();
        if (k0 + BK < K) LOAD_STEP(k0 + BK);  // in flight during this step's math
        MATH(0u);
      }
      if (edge) barrier();  // the edge stores below reuse shared memory
#endif
      [[unroll]] for (uint i = 0u; i < CR; ++i) {
        [[unroll]] for (uint j = 0u; j < CC; ++j) {
          const uint gi = m0 + (wm * CR + i) * LM, gj = n0 + (wn * CC + j) * LN;
          if (!edge || (gi + LM <= M && gj + LN <= N)) {
            STORE_DIRECT(acc[i][j], c_addr, gi * N + gj, N);
          } else {
            const uint cb = warp * (LM * LN / 4u);
            coopMatStoreNV(acc[i][j], Sh, cb, LN / 4u, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < LM * LN; e += 32u) {
              const uint r = gi + e / LN, c = gj + e % LN;
              if (r < M && c < N) STORE_ONE(c_addr, r * N + c, uintBitsToFloat(Sh[cb + e / 4u][e % 4u]));
            }
            subgroupBarrier();
          }
        }
      }
    }
  }
}
)";

}  // namespace

std::string coop_store_glsl(const char* macro, const char* scope, const char* rows, const char* cols, DType out) {
  const std::string m = std::string("#define ") + macro + "(m, addr, i, stride) ";
  KILN_CHECK(out == DType::f32 || out == DType::f16 || out == DType::bf16, "matmul",
             "the cooperative-matrix kernels write f32, f16 or bf16");
  if (out == DType::f32) return "#define OUT_SIZE 4ul\n" + m + "coopMatStoreNV(m, F32s(addr).v, i, stride, false)\n";
  const std::string half = std::string("fcoopmatNV<16, ") + scope + ", " + rows + ", " + cols + ">";
  return "#define OUT_SIZE 2ul\n" + m + "{ " + half + " h = " + half +
         "(m); coopMatStoreNV(h, F16s(addr).v, i, stride, false); }\n";
}

std::uint32_t CoopConfig::shared_words(CoopShape s) const {
  const std::uint32_t stage = bm * (bk / 8 + 1) + bk * (bn / 8 + 1);
  return std::max(stages * stage, wm * wn * s.m * s.n / 4);
}

bool CoopConfig::valid_for(CoopShape s) const {
  return s.m != 0 && (bm / wm) % s.m == 0 && (bn / wn) % s.n == 0 && bk % s.k == 0 && s.k % 8 == 0 &&
         s.n % 8 == 0 && (bm * bk / 8) % threads() == 0 && (bk * bn / 8) % threads() == 0 && bk % 8 == 0 &&
         bn % 8 == 0 && (stages == 1 || stages == 2);
}

const std::vector<CoopConfig>& coop_configs() {
  // Measured on an H200 (4096^3, f16): every tiling lands within 0.91-1.05 ms, 64 x 64 of C
  // per subgroup the fastest (it reads each A and B fragment from shared memory the fewest
  // times per product), 32 x 32 per subgroup 1.46 ms. The first is the default without
  // autotuning; the 64 x 32 ones give mid-sized products more workgroups.
  static const std::vector<CoopConfig> configs = {
      {"c128x128x32_2x2_db", 128, 128, 32, 2, 2, 2}, {"c128x256x32_2x4", 128, 256, 32, 2, 4, 1},
      {"c256x128x32_4x2", 256, 128, 32, 4, 2, 1},    {"c128x128x64_2x2", 128, 128, 64, 2, 2, 1},
      {"c128x128x64_2x4", 128, 128, 64, 2, 4, 1},    {"c128x128x32_2x4_db", 128, 128, 32, 2, 4, 2},
      {"c128x128x32_2x4", 128, 128, 32, 2, 4, 1},
      // For products of 64 rows (a convolution of 64 output channels): no half-empty tiles.
      {"c64x128x32_1x4_db", 64, 128, 32, 1, 4, 2},
  };
  return configs;
}

std::string coop_matmul_source(const std::string& prelude, CoopShape shape, const CoopConfig& c, DType out,
                               const std::string& gather) {
  KILN_CHECK(out == DType::f16 || out == DType::f32, "matmul", "the cooperative-matrix kernel writes f16 or f32");
  KILN_CHECK(c.valid_for(shape), "matmul", std::string("cooperative-matrix configuration ") + c.name +
                                               " does not fit the subgroup shape " + std::to_string(shape.m) + "x" +
                                               std::to_string(shape.n) + "x" + std::to_string(shape.k));
  std::string s = prelude;
  s.insert(s.find('\n') + 1, kExtensions);
  s +=
      "const uint LM = " + glsl_uint(shape.m) + ", LN = " + glsl_uint(shape.n) + ", LK = " + glsl_uint(shape.k) + ";\n";
  s += "const uint BM = " + glsl_uint(c.bm) + ", BN = " + glsl_uint(c.bn) + ", BK = " + glsl_uint(c.bk) +
       ", WM = " + glsl_uint(c.wm) + ", WN = " + glsl_uint(c.wn) + ";\n";
  s += "#define STAGES " + std::to_string(c.stages) + "\n#define SHARED_WORDS " +
       std::to_string(c.shared_words(shape)) + "\n";
  s += coop_store_glsl("STORE_DIRECT", "gl_ScopeSubgroup", "LM", "LN", out);
  s += out == DType::f16 ? "#define STORE_ONE(addr, i, x) U16s(addr).v[i] = uint16_t(kiln_f32_to_f16(x))\n"
                         : "#define STORE_ONE(addr, i, x) F32s(addr).v[i] = (x)\n";
  s += glsl_matmul_common();
  if (!gather.empty()) s += "#define MM_GATHER_B 1\n" + gather;
  s += kCoopBody;
  return s;
}

CoopShape coop_shape(const VulkanDevice& dev) {
  const Context& ctx = dev.context();
  if (!ctx.info().coop_matrix_nv) return {};
  // The kernel assumes subgroups of 32 (every NVIDIA GPU).
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  vkGetPhysicalDeviceProperties2(ctx.physical(), &p2);
  if (sub.subgroupSize != 32) return {};

  auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(ctx.instance().handle(), "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (!query) return {};
  std::uint32_t n = 0;
  if (query(ctx.physical(), &n, nullptr) != VK_SUCCESS || n == 0) return {};
  std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (query(ctx.physical(), &n, props.data()) != VK_SUCCESS) return {};
  // Prefer 16 x 16 x 16, then 16 x 8 x 16, then any shape the first configuration takes.
  CoopShape best;
  int best_rank = 0;
  std::string listed;
  for (const auto& p : props) {
    // VkComponentTypeNV: 0 f16, 1 f32, 2 f64, 3..6 s8..s64, 7..10 u8..u64 (no bf16 in this extension).
    listed += " " + std::to_string(p.MSize) + "x" + std::to_string(p.NSize) + "x" + std::to_string(p.KSize) + ":" +
              std::to_string(p.AType) + "," + std::to_string(p.BType) + "," + std::to_string(p.CType) + "," +
              std::to_string(p.DType) + (p.scope == VK_SCOPE_SUBGROUP_NV ? "" : "(not subgroup)");
    if (p.AType != VK_COMPONENT_TYPE_FLOAT16_NV || p.BType != VK_COMPONENT_TYPE_FLOAT16_NV ||
        p.CType != VK_COMPONENT_TYPE_FLOAT32_NV || p.DType != VK_COMPONENT_TYPE_FLOAT32_NV ||
        p.scope != VK_SCOPE_SUBGROUP_NV)
      continue;
    const CoopShape s{p.MSize, p.NSize, p.KSize};
    if (!coop_configs().front().valid_for(s)) continue;
    const int rank = (s.m == 16 && s.n == 16 && s.k == 16) ? 3 : (s.m == 16 && s.n == 8 && s.k == 16) ? 2 : 1;
    if (rank > best_rank) best = s, best_rank = rank;
  }
  if (log_enabled(spdlog::level::debug))
    logger().debug("vulkan cooperative matrix shapes (MxNxK:A,B,C,D types):{}", listed);
  return best;
}

}  // namespace kiln::vk
