// The tiled matmul kernel's GLSL, generated from a TileConfig (see vk_matmul.h).
//
// A workgroup computes a BM x BN tile of C. Per step of BK, every thread loads vec4s of the A
// tile (4 consecutive k of one row) and of the B tile (4 consecutive columns of one k) into
// registers, stores them to shared memory (A row-major with one vec4 of padding per row, B
// row-major), and, while the next step's loads are in flight, multiplies from shared memory:
// per 4 k it reads one vec4 of A per owned row and TN/4 vec4s of B per k, and does TM x TN
// FMAs. A thread owns rows ty + i*TY and column quads tx + g*TX, so that the B reads of a
// subgroup are consecutive 16-byte words (no bank conflicts) and the C stores coalesce.
// Out-of-range rows, columns and k read as 0 and are never stored; batches are the z
// dimension (and a grid-stride loop beyond 65535); operands are f32, f16 or bf16 (converted
// to f32 on load, with f32 accumulation; C rounded once on store, to the operands' dtype or, for
// 16-bit operands, kept in f32). A fused epilogue
// (MatmulEpilogue) runs on each element of C where it is stored. An operand stored transposed
// (a Linear layer's weight: x Wᵀ) is read in place, four strided elements a load. An implicit GEMM (a
// convolution, vk_conv_gemm.cpp) swaps B's load for its own and adds a bias per row of C.
#include <string>

#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/devices/vulkan/vk_shader.h"
#include "kiln/base/error.h"

namespace kiln::vk {

namespace {

// Element access macros per storage dtype. Operands: PTR1/LOAD1 for one element, PTR4/LOAD4
// for 4 consecutive elements at an index that is a multiple of 4, ESIZE bytes each. C: CPTR1/
// STORE1 and CPTR4/STORE4 likewise, CSIZE bytes each (f32 where 16-bit products are summed
// afterwards: TileVariant::c_f32).
std::string operand_macros(DType t) {
  switch (t) {
    case DType::f32:
      return "#define ESIZE 4ul\n#define PTR1 F32s\n#define PTR4 MmF32x4s\n#define LOAD1(p, i) p.v[i]\n"
             "#define LOAD4(p, i) p.v[(i) >> 2]\n";
    case DType::f16:
    case DType::bf16: {
      const std::string from = t == DType::f16 ? "kiln_f16_to_f32" : "kiln_bf16_to_f32";
      return "#define ESIZE 2ul\n#define PTR1 U16s\n#define PTR4 MmU32x2s\n#define LOAD1(p, i) " + from +
             "(uint(p.v[i]))\n#define LOAD4(p, i) mm_unpack4(p.v[(i) >> 2])\n"
             "vec4 mm_unpack4(uvec2 w) {\n  return vec4(" +
             from + "(w.x & 0xffffu), " + from + "(w.x >> 16), " + from + "(w.y & 0xffffu), " + from +
             "(w.y >> 16));\n}\n";
    }
    default: throw Error("matmul", std::string("no Vulkan matmul for dtype ") + dtype_name(t));
  }
}

std::string output_macros(DType t) {
  switch (t) {
    case DType::f32:
      return "#define CSIZE 4ul\n#define CPTR1 F32s\n#define CPTR4 MmF32x4s\n#define STORE1(p, i, x) p.v[i] = (x)\n"
             "#define STORE4(p, i, x) p.v[(i) >> 2] = (x)\n";
    case DType::f16:
    case DType::bf16: {
      const std::string to = t == DType::f16 ? "kiln_f32_to_f16" : "kiln_f32_to_bf16";
      return "#define CSIZE 2ul\n#define CPTR1 U16s\n#define CPTR4 MmU32x2s\n"
             "#define STORE1(p, i, x) p.v[i] = uint16_t(" +
             to + "(x))\n#define STORE4(p, i, x) p.v[(i) >> 2] = mm_pack4(x)\n"
             "uvec2 mm_pack4(vec4 x) {\n  return uvec2(" +
             to + "(x.x) | (" + to + "(x.y) << 16), " + to + "(x.z) | (" + to + "(x.w) << 16));\n}\n";
    }
    default: throw Error("matmul", std::string("no Vulkan matmul for dtype ") + dtype_name(t));
  }
}

// Loads of one vec4 of A (4 consecutive k of row `row`) and of B (4 consecutive columns of row
// `k`), zero outside the matrix. Written as if-statements: a select could load out of bounds.
std::string load_functions(const TileVariant& v, const MatmulEpilogue* epilogue) {
  std::string s;
  s += "vec4 load_a(PTR1 A, PTR4 A4, uint M, uint K, uint row, uint k) {\n  vec4 r = vec4(0.0);\n";
  if (v.trans_a) {
    // Aᵀ in memory ([K, M]): A[row, k] is element k * M + row.
    s += v.whole ? "  {\n" : "  if (row < M) {\n";
    s += "    uint i = k * M + row;\n";
    for (int j = 0; j < 4; ++j) {
      const std::string kj = "k + " + std::to_string(j) + "u";
      s += "    " + (v.whole ? std::string() : "if (" + kj + " < K) ") + "r[" + std::to_string(j) + "] = LOAD1(A, i" +
           (j ? " + " + std::to_string(j) + "u * M" : std::string()) + ");\n";
    }
    s += "  }\n";
  } else if (v.whole) {
    s += "  r = LOAD4(A4, row * K + k);\n";
  } else if (v.vec_a) {
    s += "  if (row < M && k < K) r = LOAD4(A4, row * K + k);\n";
  } else {
    s += "  if (row < M) {\n    uint i = row * K + k;\n";
    s += "    if (k < K) r.x = LOAD1(A, i);\n    if (k + 1u < K) r.y = LOAD1(A, i + 1u);\n";
    s += "    if (k + 2u < K) r.z = LOAD1(A, i + 2u);\n    if (k + 3u < K) r.w = LOAD1(A, i + 3u);\n  }\n";
  }
  s += "  return r;\n}\n";
  if (!v.gather_b) s += "vec4 load_b(PTR1 B, PTR4 B4, uint K, uint N, uint k, uint col) {\n  vec4 r = vec4(0.0);\n";
  if (v.gather_b) {
    // the hooks' load_b
  } else if (v.trans_b) {
    // Bᵀ in memory ([N, K]): B[k, col] is element col * K + k.
    s += v.whole ? "  {\n" : "  if (k < K) {\n";
    s += "    uint i = col * K + k;\n";
    for (int j = 0; j < 4; ++j) {
      const std::string cj = "col + " + std::to_string(j) + "u";
      s += "    " + (v.whole ? std::string() : "if (" + cj + " < N) ") + "r[" + std::to_string(j) + "] = LOAD1(B, i" +
           (j ? " + " + std::to_string(j) + "u * K" : std::string()) + ");\n";
    }
    s += "  }\n";
  } else if (v.whole) {
    s += "  r = LOAD4(B4, k * N + col);\n";
  } else if (v.vec_b) {
    s += "  if (k < K && col < N) r = LOAD4(B4, k * N + col);\n";
  } else {
    s += "  if (k < K) {\n    uint i = k * N + col;\n";
    s += "    if (col < N) r.x = LOAD1(B, i);\n    if (col + 1u < N) r.y = LOAD1(B, i + 1u);\n";
    s += "    if (col + 2u < N) r.z = LOAD1(B, i + 2u);\n    if (col + 3u < N) r.w = LOAD1(B, i + 3u);\n  }\n";
  }
  if (!v.gather_b) s += "  return r;\n}\n";
  s += "void store_c(CPTR1 C, CPTR4 C4, uint N, uint row, uint col, vec4 x) {\n";
  if (v.whole) {
    s += "  STORE4(C4, row * N + col, x);\n";
  } else if (v.vec_b) {
    s += "  if (col < N) STORE4(C4, row * N + col, x);\n";
  } else {
    s += "  uint i = row * N + col;\n";
    s += "  if (col < N) STORE1(C, i, x.x);\n  if (col + 1u < N) STORE1(C, i + 1u, x.y);\n";
    s += "  if (col + 2u < N) STORE1(C, i + 2u, x.z);\n  if (col + 3u < N) STORE1(C, i + 3u, x.w);\n";
  }
  s += "}\n";
  if (epilogue) {
    // The epilogue goes where C is stored: same thread, same element, after C.
    s += "void store_c_epilogue(CPTR1 C, CPTR4 C4, uint N, uint row, uint col, vec4 x) {\n";
    if (epilogue->store_c) s += "  store_c(C, C4, N, row, col, x);\n";
    s += "  uint i = mm_c_first + row * N + col;\n";
    s += "  if (col < N) epilogue(i, x.x);\n  if (col + 1u < N) epilogue(i + 1u, x.y);\n";
    s += "  if (col + 2u < N) epilogue(i + 2u, x.z);\n  if (col + 3u < N) epilogue(i + 3u, x.w);\n}\n";
    s += "#define STORE_C store_c_epilogue\n";
  } else {
    s += "#define STORE_C store_c\n";
  }
  return s;
}

// What both layouts of A share: B's tile in shared memory (row-major, as in memory) and the
// global loads of a step.
constexpr const char* kSharedB = R"(
const uint TX = BN / TN, TY = BM / TM, WG = TX * TY;
const uint SB4 = BN / 4u;       // vec4s per row of Bs
const uint AV = BM * BK / 4u / WG, BV = BK * BN / 4u / WG;  // vec4 loads per thread and step
layout(local_size_x = WG) in;
shared vec4 Bs[STAGES * BK * SB4];

// The A and B vec4s of step k0 into registers ra, rb; ra, rb into shared stage s (STORE_STEP,
// per layout of A); the products of shared stage s (MATH, per layout).
// Which vec4 of a tile load e of a step is: A_ROW, A_KQ (row, k quad) and B_K, B_Q (k, column
// quad). Neighbouring threads take neighbouring vec4s of a row as it is stored: along k for A
// and along the columns for B, but down the rows (k for B) where an operand is stored transposed.
#if TRANS_A
#define A_ROW(e) ((e) % BM)
#define A_KQ(e) ((e) / BM)
#else
#define A_ROW(e) ((e) / (BK / 4u))
#define A_KQ(e) ((e) % (BK / 4u))
#endif
#if TRANS_B
#define B_K(e) ((e) % BK)
#define B_Q(e) ((e) / BK)
#define B_SLOT(e) (B_K(e) * SB4 + B_Q(e))
#else
#define B_K(e) ((e) / SB4)
#define B_Q(e) ((e) % SB4)
#define B_SLOT(e) (e)
#endif
#define LOAD_STEP(k0) { \
  [[unroll]] for (uint j = 0u; j < AV; ++j) { \
    const uint e = tid + j * WG; \
    ra[j] = load_a(A, A4, M, K, m0 + A_ROW(e), (k0) + A_KQ(e) * 4u); \
  } \
  [[unroll]] for (uint j = 0u; j < BV; ++j) { \
    const uint e = tid + j * WG; \
    rb[j] = load_b(B, B4, K, N, (k0) + B_K(e), n0 + B_Q(e) * 4u); \
  } }
#define STORE_B(s) [[unroll]] for (uint j = 0u; j < BV; ++j) { \
    const uint e = tid + j * WG; \
    Bs[(s) * (BK * SB4) + B_SLOT(e)] = rb[j]; \
  }
)";

// A row-major in shared memory (one vec4 of padding per row): per 4 k a thread reads one vec4
// of A per owned row (rows ty + i * TY) and TN / 4 vec4s of B per k.
constexpr const char* kRowMajorA = R"(
const uint SA4 = BK / 4u + 1u;  // vec4s per row of As (one of padding)
shared vec4 As[STAGES * BM * SA4];
#define STORE_STEP(s) { \
  [[unroll]] for (uint j = 0u; j < AV; ++j) { \
    const uint e = tid + j * WG; \
    As[(s) * (BM * SA4) + A_ROW(e) * SA4 + A_KQ(e)] = ra[j]; \
  } \
  STORE_B(s) }
#define MATH(s) { \
  [[unroll]] for (uint kq = 0u; kq < BK / 4u; ++kq) { \
    vec4 a[TM]; \
    [[unroll]] for (uint i = 0u; i < TM; ++i) a[i] = As[(s) * (BM * SA4) + (i * TY + ty) * SA4 + kq]; \
    [[unroll]] for (uint kk = 0u; kk < 4u; ++kk) { \
      vec4 b[TN / 4u]; \
      [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) b[g] = Bs[(s) * (BK * SB4) + (kq * 4u + kk) * SB4 + g * TX + tx]; \
      [[unroll]] for (uint i = 0u; i < TM; ++i) \
        [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) \
          acc[i * (TN / 4u) + g] = fma(vec4(a[i][kk]), b[g], acc[i * (TN / 4u) + g]); \
    } \
  } }
// The tile row of a thread's accumulator row i.
#define ROW(i) ((i) * TY + ty)
)";

// A k-major in shared memory (transposed as it is stored): per k a thread reads TM / 4 vec4s
// of A (row quads ty + q * TY) and TN / 4 of B, so that its registers hold one k at a time (TM
// + TN of them instead of 4 TM + TN), which leaves room for TM x TN = 128 accumulators. A row
// of As has one vec4 of padding: a warp's transposed stores of two k quads then fall in
// different banks.
constexpr const char* kKMajorA = R"(
const uint SA4 = BM / 4u + 1u;  // vec4s per k of As (one of padding)
shared vec4 As[STAGES * BK * SA4];
#define STORE_STEP(s) { \
  [[unroll]] for (uint j = 0u; j < AV; ++j) { \
    const uint e = tid + j * WG, row = A_ROW(e), k = A_KQ(e) * 4u; \
    [[unroll]] for (uint c = 0u; c < 4u; ++c) As[((s) * BK + k + c) * SA4 + row / 4u][row % 4u] = ra[j][c]; \
  } \
  STORE_B(s) }
#define MATH(s) { \
  [[unroll]] for (uint k = 0u; k < BK; ++k) { \
    vec4 a[TM / 4u], b[TN / 4u]; \
    [[unroll]] for (uint q = 0u; q < TM / 4u; ++q) a[q] = As[((s) * BK + k) * SA4 + q * TY + ty]; \
    [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) b[g] = Bs[((s) * BK + k) * SB4 + g * TX + tx]; \
    [[unroll]] for (uint i = 0u; i < TM; ++i) \
      [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) \
        acc[i * (TN / 4u) + g] = fma(vec4(a[i / 4u][i % 4u]), b[g], acc[i * (TN / 4u) + g]); \
  } }
#define ROW(i) ((((i) / 4u) * TY + ty) * 4u + (i) % 4u)
)";

constexpr const char* kMain = R"(
void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % TX, ty = tid / TX;
#ifdef MM_EPILOGUE
  epilogue_init();
#endif
#ifdef MM_HOOKS
  mm_hooks_init();
#endif
  const uint64_t a_base = arg_u64(0), b_base = arg_u64(1), c_base = arg_u64(2);
  const uint M = arg_u32(3), N = arg_u32(4), K = arg_u32(5), batches = arg_u32(6), nb = arg_u32(7);
  const uint tiles_m = (M + BM - 1u) / BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  for (uint bz = gl_WorkGroupID.z; bz < batches; bz += gl_NumWorkGroups.z) {
    uint64_t a_off, b_off;
    mm_batch_offsets(bz, nb, a_off, b_off);
#ifdef MM_HOOKS
    mm_hooks_batch(bz, a_off);
#endif
    const uint64_t a_addr = a_base + a_off * ESIZE, b_addr = b_base + b_off * ESIZE;
    const uint64_t c_addr = c_base + uint64_t(bz) * uint64_t(M) * uint64_t(N) * CSIZE;
    mm_c_first = bz * M * N;
    PTR1 A = PTR1(a_addr); PTR4 A4 = PTR4(a_addr);
    PTR1 B = PTR1(b_addr); PTR4 B4 = PTR4(b_addr);
    CPTR1 C = CPTR1(c_addr); CPTR4 C4 = CPTR4(c_addr);
    for (uint mt = gl_WorkGroupID.y; mt < tiles_m; mt += gl_NumWorkGroups.y) {
      const uint m0 = mt * BM;
      vec4 acc[TM * (TN / 4u)];
      [[unroll]] for (uint i = 0u; i < TM * (TN / 4u); ++i) acc[i] = vec4(0.0);
      vec4 ra[AV], rb[BV];
      LOAD_STEP(0u);
#if STAGES == 2
      barrier();  // the previous tile has finished reading shared memory
      STORE_STEP(0u);
      barrier();
      for (uint k0 = 0u; k0 < K; k0 += 2u * BK) {
        STEP2(k0, 0u, 1u);
        if (k0 + BK >= K) break;
        STEP2(k0 + BK, 1u, 0u);
      }
#else
      for (uint k0 = 0u; k0 < K; k0 += BK) {
        barrier();  // the previous step (or tile) has finished reading shared memory
        STORE_STEP(0u);
        barrier();
        if (k0 + BK < K) LOAD_STEP(k0 + BK);  // the next step's loads overlap this step's math
        MATH(0u);
      }
#endif
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        const uint row = m0 + ROW(i);
#if !WHOLE_TILES
        if (row >= M) continue;
#endif
#if ROW_BIAS
        const vec4 bias = vec4(mm_row_bias(row));
#define MM_OUT(x) ((x) + bias)
#else
#define MM_OUT(x) (x)
#endif
        [[unroll]] for (uint g = 0u; g < TN / 4u; ++g)
          STORE_C(C, C4, N, row, n0 + (g * TX + tx) * 4u, MM_OUT(acc[i * (TN / 4u) + g]));
#undef MM_OUT
      }
    }
  }
}
)";

}  // namespace

std::string tiled_matmul_source(const std::string& prelude, const TileConfig& c, const TileVariant& v,
                                const MatmulEpilogue* epilogue, const std::string& hooks) {
  KILN_CHECK(v.hooked() == !hooks.empty(), "matmul", "the tiled kernel's gather and bias variants need their hooks");
  KILN_CHECK(!(v.gather_b && v.trans_b), "matmul", "a gathered B is never stored transposed");
  std::string s = prelude;
  s.insert(s.find('\n') + 1, "#extension GL_EXT_control_flow_attributes : require\n");
  s += "layout(buffer_reference, std430, buffer_reference_align = 16) buffer MmF32x4s { vec4 v[]; };\n";
  s += "layout(buffer_reference, std430, buffer_reference_align = 8) buffer MmU32x2s { uvec2 v[]; };\n";
  KILN_CHECK(!v.c_f32 || v.dtype != DType::f32, "matmul", "an f32 C is for 16-bit operands");
  s += operand_macros(v.dtype);
  s += output_macros(v.c_f32 ? DType::f32 : v.dtype);
  s += "const uint BM = " + glsl_uint(c.bm) + ", BN = " + glsl_uint(c.bn) + ", BK = " + glsl_uint(c.bk) +
       ", TM = " + glsl_uint(c.tm) + ", TN = " + glsl_uint(c.tn) + ";\n#define STAGES " + std::to_string(c.stages) +
       "\n#define WHOLE_TILES " + (v.whole ? "1" : "0") + "\n#define ROW_BIAS " + (v.row_bias ? "1" : "0") +
       "\n#define TRANS_A " + (v.trans_a ? "1" : "0") + "\n#define TRANS_B " + (v.trans_b ? "1" : "0") + "\n";
  // The first element of the current batch of C (for an epilogue's flat index).
  s += "uint mm_c_first;\n";
  if (v.hooked()) s += "#define MM_HOOKS 1\n" + hooks;
  if (epilogue) s += "#define MM_EPILOGUE 1\n" + epilogue->glsl();
  s += load_functions(v, epilogue);
  s += glsl_matmul_common();
  s += kSharedB;
  s += c.a_k_major ? kKMajorA : kRowMajorA;
  s += kMain;
  return s;
}

const std::vector<TileConfig>& tile_configs() {
  // Large tiles (8x8 per thread) for big products; smaller ones so that mid-sized products
  // still fill the GPU; 32x32 for small ones and software devices.
  static const std::vector<TileConfig> configs = {
      {"t128x128x8_8x8", 128, 128, 8, 8, 8}, {"t128x128x16_8x8", 128, 128, 16, 8, 8},
      {"t128x64x16_8x4", 128, 64, 16, 8, 4}, {"t64x128x16_4x8", 64, 128, 16, 4, 8},
      {"t64x64x16_4x4", 64, 64, 16, 4, 4},   {"t64x64x16_8x8", 64, 64, 16, 8, 8},
      {"t32x32x16_4x4", 32, 32, 16, 4, 4},
      {"t128x128x16_8x8_db", 128, 128, 16, 8, 8, 2}, {"t128x64x16_8x8_db", 128, 64, 16, 8, 8, 2},
      {"t64x128x16_8x8_db", 64, 128, 16, 8, 8, 2},   {"t64x64x16_8x8_db", 64, 64, 16, 8, 8, 2},
      // A k-major, double-buffered (the fastest on whole tiles: 4096^3 f32 on an H200 in 3.08 ms
      // with 8 x 16 outputs a thread, 3.24 for the best row-major tiling).
      {"t128x128x16_8x16k", 128, 128, 16, 8, 16, 2, true},
      {"t64x128x16_8x8k", 64, 128, 16, 8, 8, 2, true},  {"t128x64x16_8x8k", 128, 64, 16, 8, 8, 2, true},
  };
  return configs;
}

}  // namespace kiln::vk
