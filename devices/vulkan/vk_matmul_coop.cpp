// The tensor-core matmul: f16 operands, f32 accumulators, through GL_NV_cooperative_matrix.
//
// A workgroup of 8 subgroups (of 32 invocations) computes a 128 x 128 tile of C; subgroup
// (wm, wn) of a 2 x 4 grid owns a 64 x 32 part of it as CR x CC accumulator matrices of the
// device's shape (16 x 16 or 16 x 8). Per step of 32 k, every invocation loads two 16-byte words
// of the A tile and two of the B tile, stores them to shared memory (rows padded by 16 bytes
// against bank conflicts), and loads the next step's words into registers while the subgroups
// multiply from shared memory. Rows, columns and k beyond the matrix read as 0 (K and N must be
// multiples of 8: whole 16-byte words). Accumulators inside the matrix are converted to f16 and
// stored directly; those on the edges go through a per-subgroup shared-memory block and are
// stored element by element. Same argument block as the tiled kernel (vk_matmul.cpp).
#include <string>

#include "devices/vulkan/vk_device.h"
#include "devices/vulkan/vk_matmul.h"

namespace kiln::vk {

namespace {

constexpr const char* kExtensions = R"(#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
)";

constexpr const char* kBody = R"(
layout(buffer_reference, std430, buffer_reference_align = 16) buffer MmU32x4s { uvec4 v[]; };
const uint TILE_M = 128u, TILE_N = 128u, TILE_K = 32u, WG = 256u;
const uint WARPS_M = 2u, WARPS_N = 4u;
const uint CR = TILE_M / WARPS_M / LM, CC = TILE_N / WARPS_N / LN;
const uint SA4 = (TILE_K + 8u) / 8u;  // 16-byte words per row of Ash (8 halves each)
const uint SB4 = (TILE_N + 8u) / 8u;
const uint AV = TILE_M * TILE_K / 8u / WG, BV = TILE_K * TILE_N / 8u / WG;
layout(local_size_x = WG) in;
shared uvec4 Ash[TILE_M * SA4];
shared uvec4 Bsh[TILE_K * SB4];
shared float Csh[(WG / 32u) * LM * LN];

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, LM, LN>
// The 16-byte words of the A and B tiles of step k0 into registers ra, rb (0 outside).
#define LOAD_STEP(k0) { \
  [[unroll]] for (uint j = 0u; j < AV; ++j) { \
    const uint e = tid + j * WG, row = m0 + e / (TILE_K / 8u), k = (k0) + (e % (TILE_K / 8u)) * 8u; \
    ra[j] = uvec4(0u); \
    if (row < M && k < K) ra[j] = A.v[(row * K + k) >> 3]; \
  } \
  [[unroll]] for (uint j = 0u; j < BV; ++j) { \
    const uint e = tid + j * WG, k = (k0) + e / (TILE_N / 8u), col = n0 + (e % (TILE_N / 8u)) * 8u; \
    rb[j] = uvec4(0u); \
    if (k < K && col < N) rb[j] = B.v[(k * N + col) >> 3]; \
  } }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = warp / WARPS_N, wn = warp % WARPS_N;
  const uint64_t a_base = arg_u64(0), b_base = arg_u64(1), c_base = arg_u64(2);
  const uint M = arg_u32(3), N = arg_u32(4), K = arg_u32(5), batches = arg_u32(6), nb = arg_u32(7);
  const uint tiles_m = (M + TILE_M - 1u) / TILE_M;
  const uint n0 = gl_WorkGroupID.x * TILE_N;
  for (uint bz = gl_WorkGroupID.z; bz < batches; bz += gl_NumWorkGroups.z) {
    uint64_t a_off = 0ul, b_off = 0ul;
    uint rest = bz;
    for (uint d = nb; d > 0u; --d) {
      const uint w = 8u + 3u * (d - 1u);
      const uint size = arg_u32(w);
      const uint idx = rest % size;
      rest /= size;
      a_off += uint64_t(idx) * arg_u64(w + 1u);
      b_off += uint64_t(idx) * arg_u64(w + 2u);
    }
    MmU32x4s A = MmU32x4s(a_base + a_off * 2ul);
    MmU32x4s B = MmU32x4s(b_base + b_off * 2ul);
    const uint64_t c_addr = c_base + uint64_t(bz) * uint64_t(M) * uint64_t(N) * OUT_SIZE;
    for (uint mt = gl_WorkGroupID.y; mt < tiles_m; mt += gl_NumWorkGroups.y) {
      const uint m0 = mt * TILE_M;
      ACC acc[CR][CC];
      [[unroll]] for (uint i = 0u; i < CR; ++i)
        [[unroll]] for (uint j = 0u; j < CC; ++j) acc[i][j] = ACC(0.0);
      uvec4 ra[AV], rb[BV];
      LOAD_STEP(0u);
      for (uint k0 = 0u; k0 < K; k0 += TILE_K) {
        barrier();  // the previous step has finished reading shared memory
        [[unroll]] for (uint j = 0u; j < AV; ++j) {
          const uint e = tid + j * WG;
          Ash[(e / (TILE_K / 8u)) * SA4 + e % (TILE_K / 8u)] = ra[j];
        }
        [[unroll]] for (uint j = 0u; j < BV; ++j) {
          const uint e = tid + j * WG;
          Bsh[(e / (TILE_N / 8u)) * SB4 + e % (TILE_N / 8u)] = rb[j];
        }
        barrier();
        if (k0 + TILE_K < K) LOAD_STEP(k0 + TILE_K);  // in flight during this step's math
        [[unroll]] for (uint kk = 0u; kk < TILE_K / LK; ++kk) {
          fcoopmatNV<16, gl_ScopeSubgroup, LM, LK> a[CR];
          [[unroll]] for (uint i = 0u; i < CR; ++i)
            coopMatLoadNV(a[i], Ash, (wm * CR + i) * LM * SA4 + kk * LK / 8u, SA4, false);
          [[unroll]] for (uint j = 0u; j < CC; ++j) {
            fcoopmatNV<16, gl_ScopeSubgroup, LK, LN> b;
            coopMatLoadNV(b, Bsh, kk * LK * SB4 + (wn * CC + j) * LN / 8u, SB4, false);
            [[unroll]] for (uint i = 0u; i < CR; ++i) acc[i][j] = coopMatMulAddNV(a[i], b, acc[i][j]);
          }
        }
      }
      [[unroll]] for (uint i = 0u; i < CR; ++i) {
        [[unroll]] for (uint j = 0u; j < CC; ++j) {
          const uint gi = m0 + (wm * CR + i) * LM, gj = n0 + (wn * CC + j) * LN;
          if (gi + LM <= M && gj + LN <= N) {
            STORE_DIRECT(acc[i][j], c_addr, gi * N + gj, N);
          } else {
            coopMatStoreNV(acc[i][j], Csh, warp * LM * LN, LN, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < LM * LN; e += 32u) {
              const uint r = gi + e / LN, c = gj + e % LN;
              if (r < M && c < N) STORE_ONE(c_addr, r * N + c, Csh[warp * LM * LN + e]);
            }
            subgroupBarrier();
          }
        }
      }
    }
  }
}
)";

std::string u(std::uint32_t v) { return std::to_string(v) + "u"; }

}  // namespace

std::string coop_matmul_source(const std::string& prelude, CoopShape shape, DType out) {
  KILN_CHECK(out == DType::f16 || out == DType::f32, "matmul", "the cooperative-matrix kernel writes f16 or f32");
  std::string s = prelude;
  s.insert(s.find('\n') + 1, kExtensions);
  s += "const uint LM = " + u(shape.m) + ", LN = " + u(shape.n) + ", LK = " + u(shape.k) + ";\n";
  if (out == DType::f16) {
    s += "#define OUT_SIZE 2ul\n";
    s += "#define STORE_DIRECT(m, addr, i, stride) { fcoopmatNV<16, gl_ScopeSubgroup, LM, LN> h = "
         "fcoopmatNV<16, gl_ScopeSubgroup, LM, LN>(m); coopMatStoreNV(h, F16s(addr).v, i, stride, false); }\n";
    s += "#define STORE_ONE(addr, i, x) U16s(addr).v[i] = uint16_t(kiln_f32_to_f16(x))\n";
  } else {
    s += "#define OUT_SIZE 4ul\n";
    s += "#define STORE_DIRECT(m, addr, i, stride) coopMatStoreNV(m, F32s(addr).v, i, stride, false)\n";
    s += "#define STORE_ONE(addr, i, x) F32s(addr).v[i] = (x)\n";
  }
  s += kBody;
  return s;
}

CoopShape coop_shape(const VulkanDevice& dev) {
  const Context& ctx = dev.context();
  if (!ctx.info().coop_matrix_nv) return {};
  static_assert(kCoopThreads == 256);
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
  // Shapes the 128 x 128 x 32 tiling divides: prefer 16 x 16 x 16, then 16 x 8 x 16, then any.
  CoopShape best;
  int best_rank = 0;
  for (const auto& p : props) {
    if (p.AType != VK_COMPONENT_TYPE_FLOAT16_NV || p.BType != VK_COMPONENT_TYPE_FLOAT16_NV ||
        p.CType != VK_COMPONENT_TYPE_FLOAT32_NV || p.DType != VK_COMPONENT_TYPE_FLOAT32_NV ||
        p.scope != VK_SCOPE_SUBGROUP_NV)
      continue;
    const std::uint32_t m = p.MSize, nn = p.NSize, k = p.KSize;
    if (m == 0 || nn == 0 || k == 0 || 64 % m || 32 % nn || kCoopTileK % k || nn % 8 || k % 8) continue;
    const int rank = (m == 16 && nn == 16 && k == 16) ? 3 : (m == 16 && nn == 8 && k == 16) ? 2 : 1;
    if (rank > best_rank) best = {m, nn, k}, best_rank = rank;
  }
  return best;
}

}  // namespace kiln::vk
