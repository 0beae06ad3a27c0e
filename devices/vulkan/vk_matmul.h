// devices/vulkan private: matmul on the Vulkan device. Two kernels compute C = A @ B for
// row-major operands batched over the z dimension (a broadcast operand has batch stride 0):
//  - a register-blocked, shared-memory tiled kernel (FMA in f32), generated from a template with
//    the parameters of TileConfig; several configurations, picked per shape class by the
//    autotuner (vk_autotune.h); f32, f16 and bf16 inputs, f32 accumulation;
//  - a tensor-core kernel (GL_NV_cooperative_matrix) for f16 inputs with f32 accumulators, on
//    devices that expose VK_NV_cooperative_matrix with an f16 x f16 -> f32 shape; several
//    configurations (CoopConfig), autotuned together with the tiled ones;
//  - on devices with VK_NV_cooperative_matrix2, a tensor-core kernel on workgroup-scope matrices
//    (WgCoopConfig), for products whose M, N, K are multiples of its tile, or on copies of the
//    operands padded to whole tiles (padded_wg_coop_config), autotuned with the rest.
// bf16 has no cooperative-matrix type in VK_NV_cooperative_matrix (an H200 lists f16 and 8-bit
// integer shapes only): bf16 takes the workgroup-scope kernel where the device has bfloat16
// matrices (VK_KHR_shader_bfloat16), else the tiled kernel.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/devices/capabilities.h"
#include "kiln/devices/vulkan/vk_kernels.h"
#include "kiln/ops/dtype.h"

namespace kiln::vk {

class AutotuneCache;
class VulkanDevice;

// One configuration of the tiled kernel: a BM x BN tile of C per workgroup, staged through
// shared memory BK columns of A (rows of B) at a time; each thread owns TM x TN outputs.
// TM, TN and BK are multiples of 4 (loads and shared-memory reads are vec4). stages = 2 double-
// buffers the shared tiles (one barrier per step instead of two).
struct TileConfig {
  const char* name;  // stable: the autotune cache on disk stores it
  std::uint32_t bm, bn, bk, tm, tn;
  std::uint32_t stages = 1;
  bool a_k_major = false;
  std::uint32_t threads() const { return (bm / tm) * (bn / tn); }
  // A's tile has one vec4 of padding per row (row-major) or per k (k-major).
  std::uint32_t shared_bytes() const {
    const std::uint32_t a_vec4s = a_k_major ? bk * (bm / 4 + 1) : bm * (bk / 4 + 1);
    return stages * 16 * (a_vec4s + bk * (bn / 4));
  }
};

// Every configuration, in a fixed order (the first is the default for large products).
const std::vector<TileConfig>& tile_configs();

// How the kernel reads and writes memory for one shape: vector access needs K % 4 == 0 for A and
// N % 4 == 0 for B and C; whole tiles (M, N and K multiples of the configuration's tile, with
// vector access) need no bounds checks.
struct TileVariant {
  DType dtype = DType::f32;  // of A, B and C
  bool vec_a = false;
  bool vec_b = false;
  bool whole = false;
  // Hooks of an implicit GEMM (vk_conv_gemm.cpp), whose GLSL the caller passes as `hooks`:
  // gather_b: B is no matrix in memory, the hooks' load_b (the signature of the generated one)
  // computes each vec4 of it; row_bias: mm_row_bias(row) is added to C's row before the store
  // and the epilogue. The hooks also define mm_hooks_init(), called first, and
  // mm_hooks_batch(bz, a_off), called when a batch starts.
  bool gather_b = false;
  bool row_bias = false;
  bool hooked() const { return gather_b || row_bias; }
  // An operand stored transposed (matmul's MatmulAttrs): A as [K, M]
  // or B as [N, K] in memory. Its loads are four strided elements, with the threads of a step
  // stepping along the stored rows so that neighbours read neighbouring words; vec_a / vec_b
  // then only say what C's stores may do.
  bool trans_a = false;
  bool trans_b = false;
  // C stored as f32 from 16-bit A and B: products that are summed afterwards (a convolution's
  // weight gradient over images) then round once, after the sum, as PyTorch's do.
  bool c_f32 = false;
};

// GLSL both matmul kernels share: mm_batch_offsets (A's and B's element offsets for an output
// batch, from the argument block) and STEP2 (one double-buffered K step, over the kernel's own
// LOAD_STEP, MATH and STORE_STEP).
const char* glsl_matmul_common();

// An anchored group's epilogue taken into the tiled kernel (vk_anchor.cpp writes it): `glsl`
// defines epilogue_init(), called first, and `void epilogue(uint i, float c)`, applied to each
// element of C (i: its row-major index in the whole output) where the kernel stores it, after
// that store when store_c (else C is not written: its address may be 0). Its parameters are
// `args`, after the batch dims (from word kBase).
struct MatmulEpilogue {
  static constexpr const char* kBase = "(8u + 3u * arg_u32(7u))";
  std::string key;  // names the GLSL (the expression's structure key)
  std::function<std::string()> glsl;
  bool store_c = true;
  LaunchArgs args;
};

// The GLSL of the tiled kernel; `prelude` is the device's kernel_prelude().
std::string tiled_matmul_source(const std::string& prelude, const TileConfig& config, const TileVariant& variant,
                                const MatmulEpilogue* epilogue = nullptr, const std::string& hooks = {});

// What other kernels built on the tiled one (vk_conv_gemm.cpp) share with matmul's choice of a
// configuration: the autotuner's memory of this GPU (its shape classes are the caller's to name
// apart from matmul's), whether to time at all, whether a configuration fits the device, the
// configuration taken without timing, the one a test forces (-1: none), and the timing of
// candidates (seconds per run of run(i), i < count; the first is also the warm-up).
AutotuneCache& tiled_autotune_cache(VulkanDevice& dev);
bool tiled_autotuning(VulkanDevice& dev);
bool tile_config_fits(const VulkanDevice& dev, const TileConfig& c);
int heuristic_tile_config(const VulkanDevice& dev, std::uint64_t m, std::uint64_t n, std::uint64_t k,
                          std::uint64_t batches);
int forced_tile_config();
std::vector<double> time_candidates(VulkanDevice& dev, std::size_t count, const std::function<void(std::size_t)>& run);

// A matmul with an epilogue, in the configuration the autotuner picks for the plain product (its
// timing runs write the plain product to C, or to scratch when C is not stored). False, with
// nothing run, where that configuration is no tiled one (the tensor-core kernels of 16-bit
// products take no epilogue): the caller then runs the group in steps.
bool matmul_with_epilogue(VulkanDevice& dev, const OpIr& op, const Buffer* a, const Buffer* b, const Buffer* c,
                          const MatmulEpilogue& epilogue);

// A cooperative-matrix shape: M x N x K of one subgroup-scope multiply-add.
struct CoopShape {
  std::uint32_t m = 0, n = 0, k = 0;
};

// One configuration of the cooperative-matrix kernel: a BM x BN tile of C per workgroup of
// WM x WN subgroups (of 32), each owning a (BM / WM) x (BN / WN) part of it as several
// accumulator matrices; A and B staged through shared memory BK at a time (stages = 2:
// double-buffered, one barrier per step).
struct CoopConfig {
  const char* name;  // stable: the autotune cache on disk stores it
  std::uint32_t bm, bn, bk, wm, wn, stages;
  std::uint32_t threads() const { return wm * wn * 32; }
  // Shared memory in 16-byte words: the staged tiles (rows padded by 16 bytes), which the edge
  // tiles' C blocks reuse.
  std::uint32_t shared_words(CoopShape s) const;
  std::uint32_t shared_bytes(CoopShape s) const { return 16 * shared_words(s); }
  bool valid_for(CoopShape s) const;  // the subgroup shape divides the tiles
};

// Every cooperative-matrix configuration, in a fixed order (the first is the default).
const std::vector<CoopConfig>& coop_configs();

// The GLSL of the cooperative-matrix kernel for f16 operands (f32 accumulation, output `out`:
// f16 or f32). K % 8 == 0 and N % 8 == 0 are required (16-byte loads); M, N, K need not be
// multiples of the tiles.
// `gather` (GLSL after the kernel's common code) makes B's loads gathers: it defines
// mm_hooks_init(), uvec3 mm_gather_window(uint col) (what the gather needs of column col, found
// once per tile) and uvec4 mm_gather_b8(uint64_t b, uint k, uint col, uint N, uvec3 window), the
// eight f16 of row k, columns col.. of B at address b (vk_conv_gemm.cpp's implicit GEMM).
std::string coop_matmul_source(const std::string& prelude, CoopShape shape, const CoopConfig& config, DType out,
                               const std::string& gather = {});

// GLSL shared by the cooperative-matrix kernels: OUT_SIZE (bytes per element of C) and the macro
// `macro`(m, addr, i, stride), which stores the f32 accumulator m (of `scope`, rows x cols) at
// element i of C at `addr`, converted to 16 bits where C is f16 (or bf16: the matrix types of a
// bf16 kernel are rewritten from f16, vk_spirv_coop.h).
std::string coop_store_glsl(const char* macro, const char* scope, const char* rows, const char* cols, DType out);

// The f16 x f16 -> f32 subgroup shape the device offers for the cooperative-matrix kernel;
// m == 0 when it has none (or VK_NV_cooperative_matrix is not enabled).
CoopShape coop_shape(const VulkanDevice& dev);
// What the convolution's tensor-core variant shares with matmul's choice: the device's
// shape as matmul found it once (coop_shape queries the driver), whether a
// configuration fits the device, the one a test forces (-1: none), whether the path is on.
CoopShape device_coop_shape(VulkanDevice& dev);
bool coop_config_fits(const VulkanDevice& dev, const CoopConfig& c, CoopShape s);
int forced_coop_config();
bool coop_enabled();

// One workgroup size the device lists for workgroup-scope matrices, and the granularity of the
// tile dimensions at that size.
struct WgCoopGranularity {
  std::uint32_t m = 0, n = 0, k = 0, threads = 0;
};

// The workgroup-scope f16 x f16 -> f32 matrices a device offers (VK_NV_cooperative_matrix2):
// tile dimensions must be multiples of m, n, k and at most max_dimension; a workgroup has
// `threads` invocations (the most the device lists). threads == 0 when the device has none.
struct WgCoopShape {
  std::uint32_t m = 0, n = 0, k = 0, threads = 0, max_dimension = 0;
  bool tensor_loads = false;  // the device takes tensor loads (cooperativeMatrixTensorAddressing)
  // The smaller workgroup sizes the device lists for the same types (threads == 0: none).
  std::array<WgCoopGranularity, 4> smaller{};
  // The granularity at `invocations` (0: the default, `threads`); threads == 0 where not listed.
  WgCoopGranularity at(std::uint32_t invocations) const;
};

// One configuration of the workgroup-scope kernel (vk_matmul_coop_wg.cpp): a BM x BN
// accumulator per workgroup, BK deep steps. Whole tiles only: it takes a product when BM, BN
// and BK divide M, N and K.
struct WgCoopConfig {
  const char* name;  // stable: the autotune cache on disk stores it
  std::uint32_t bm, bn, bk;
  bool tensor = false;  // load the tiles as tensors (SPV_NV_tensor_addressing), else as plain matrices
  std::uint32_t unroll = 1;  // BK steps per trip of the k loop (then one at a time for the rest)
  std::uint32_t threads = 0;  // invocations per workgroup; 0: the most the device lists
  bool valid_for(const WgCoopShape& s) const;
  bool takes(std::uint64_t m, std::uint64_t n, std::uint64_t k) const;
};

const std::vector<WgCoopConfig>& wg_coop_configs();
// For f16 or bf16 operands (f32 accumulators); threads == 0 when the device has none.
WgCoopShape wg_coop_shape(const VulkanDevice& dev, DType operands);
// The same, as matmul found it once for this device (no driver query).
WgCoopShape device_wg_coop_shape(VulkanDevice& dev, DType operands);
// The GLSL of the workgroup-scope kernel for f16 or bf16 operands (f32 accumulation; output the
// operands' dtype or f32), compiled into SPV_KHR_cooperative_matrix form.
std::string wg_coop_matmul_source(const std::string& prelude, const WgCoopShape& shape, const WgCoopConfig& config,
                                  DType operands, DType out);

// f16 / bf16 products of one matrix pair that are no whole tiles may run the workgroup-scope
// kernel on copies of A and B padded with zeros to whole tiles, C copied out of a padded result
// (tensor-load configurations only), where the padded work is at most 1.3x the product's (f16)
// or 4x (bf16). The autotuner tries every such configuration; this is the one taken without
// timing: the first listed (the fastest) whose padded work is within 5% of the least, or -1
// where none pads within the bound.
int padded_wg_coop_config(const WgCoopShape& shape, std::uint64_t m, std::uint64_t n, std::uint64_t k, DType operands);

// The rows x cols matrix of 16-bit words at src (row stride src_stride) into the dst_rows x
// dst_cols one at dst, zeros outside it (dst_cols a multiple of 8; both buffers 16-byte
// aligned): the padded operands of the workgroup-scope kernel (vk_matmul_pad.cpp). `matrices`
// such matrices, src_matrix_stride words apart at src (0: rows x src_stride), one after
// another at dst. Every index fits 32 bits.
void pad_matrix16(VulkanDevice& dev, const Buffer& src, std::uint32_t rows, std::uint32_t cols, std::uint32_t src_stride,
                  const Buffer& dst, std::uint32_t dst_rows, std::uint32_t dst_cols, std::uint32_t matrices = 1,
                  std::uint32_t src_matrix_stride = 0);

// The dtypes whose products the device reads with a transposed operand in place
// (DeviceCapabilities::matmul_transposed): the tiled kernel reads either operand transposed, the
// tensor-core kernels do not, so f16 and bf16 count only where the device has none for them (a
// copy and the faster kernel win there). f32 always runs the tiled kernel.
DTypeSet transposed_matmul_dtypes(const VulkanDevice& dev);

// Test hooks: force one tiled configuration (an index into tile_configs()) or one
// cooperative-matrix configuration (into coop_configs(); used where the coop path applies) for
// every matmul, or -1 for the normal choice; disable the cooperative-matrix path.
void force_tile_config(int index);
void force_coop_config(int index);
void force_wg_coop_config(int index);  // into wg_coop_configs(), where it takes the product
void set_coop_enabled(bool enabled);

}  // namespace kiln::vk
