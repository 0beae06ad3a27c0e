// matmul on Vulkan: the op's geometry (torch.matmul's rules, as on the CPU device; an operand
// may be stored transposed, MatmulAttrs (ops/attrs_linalg.h), which the tiled kernel
// alone reads in place), the choice
// of kernel, and its launch. Like the CPU, a right operand shared by every batch folds the
// batches into one taller product; otherwise batches are the grid's z dimension, with each
// operand's batch strides (0 where it is broadcast) in the argument block:
//   0 A, 1 B, 2 C, 3 M, 4 N, 5 K, 6 batches, 7 batch dims, then per dim: size, A stride, B stride
// The kernel for a shape: the configuration that the autotuner picked for the shape class
// (vk_autotune.h) among the tiled ones and, where the device has tensor cores (and K, N are
// multiples of 8), the cooperative-matrix ones: subgroup scope for f16; workgroup scope for f16
// and bf16 where the device has VK_NV_cooperative_matrix2 (and bfloat16 matrices) and the tiles
// divide M, N, K. Without autotuning, the first
// cooperative-matrix configuration or a heuristic tiled one. KILN_MATMUL_CONFIG=<name> forces
// a configuration wherever it applies. KILN_LOG=info prints each autotuning's timings.
// C has the operands' dtype, or f32 from f16 / bf16 operands: not the op's own rule but a step's
// (vk_conv_grad.cpp sums such products in f32 before it rounds), which every kernel takes as
// it accumulates in f32 anyway.
#include "kiln/devices/vulkan/vk_matmul.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "kiln/devices/vulkan/vk_autotune.h"
#include "kiln/devices/vulkan/vk_parallel_compile.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"
#include "kiln/base/log.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace {

std::atomic<int> g_forced_tile{-1};
std::atomic<int> g_forced_coop{-1};
std::atomic<int> g_forced_wg_coop{-1};
std::atomic<bool> g_coop_enabled{true};

struct Geometry {
  std::uint64_t m = 1, n = 1, k = 1, batches = 1;
  bool ta = false, tb = false;  // A stored as [K, M], B as [N, K] (MatmulAttrs)
  int dims = 0;  // batch dims left after dropping 1s and merging contiguous neighbours
  std::uint64_t size[kMaxRank] = {}, a_stride[kMaxRank] = {}, b_stride[kMaxRank] = {};
};

Geometry geometry(const OpIr& op) {
  const Shape& a = op.inputs[0].shape;
  const Shape& b = op.inputs[1].shape;
  const Shape& out = op.outputs[0].shape;
  Geometry g;
  const MatmulAttrs flags = MatmulAttrs::decode(op);
  g.ta = flags.transpose_a;
  g.tb = flags.transpose_b;
  const auto dim = [](const Shape& s, int from_end) { return static_cast<std::uint64_t>(s[s.rank() - from_end]); };
  g.k = dim(a, g.ta ? 2 : 1);
  g.m = a.rank() >= 2 ? dim(a, g.ta ? 1 : 2) : 1;
  g.n = b.rank() >= 2 ? dim(b, g.tb ? 2 : 1) : 1;
  const int batch_rank = out.rank() - (a.rank() >= 2) - (b.rank() >= 2);
  // Strides of each operand's batch dims, right-aligned against the output's.
  auto strides = [&](const Shape& s, std::uint64_t matrix, std::uint64_t* stride) {
    const int own = std::max(s.rank() - 2, 0);
    std::uint64_t acc = matrix;
    for (int d = batch_rank - 1; d >= 0; --d) {
      const int i = own - batch_rank + d;
      const std::uint64_t size = i >= 0 ? static_cast<std::uint64_t>(s[i]) : 1;
      stride[d] = size == 1 ? 0 : acc;
      acc *= size;
    }
  };
  std::uint64_t sa[kMaxRank] = {}, sb[kMaxRank] = {};
  strides(a, g.m * g.k, sa);
  strides(b, g.k * g.n, sb);
  bool b_batched = false;
  for (int d = 0; d < batch_rank; ++d) {
    const auto size = static_cast<std::uint64_t>(out[d]);
    g.batches *= size;
    b_batched |= sb[d] != 0;
    if (size == 1) continue;
    const int last = g.dims - 1;
    // Merge with the previous dim when both operands step through them as one.
    if (last >= 0 && g.a_stride[last] == sa[d] * size && g.b_stride[last] == sb[d] * size) {
      g.size[last] *= size;
      g.a_stride[last] = sa[d];
      g.b_stride[last] = sb[d];
      continue;
    }
    g.size[g.dims] = size;
    g.a_stride[g.dims] = sa[d];
    g.b_stride[g.dims] = sb[d];
    ++g.dims;
  }
  if (!b_batched && !g.ta) {  // A's batches are consecutive rows of one taller product
    g.m *= g.batches;
    g.batches = 1;
    g.dims = 0;
  }
  return g;
}

// A kernel choice: a tiled configuration (index into tile_configs()), a subgroup-scope
// cooperative-matrix one (into coop_configs()) or a workgroup-scope one (wg_coop_configs()),
// also on copies of the operands padded with zeros to whole tiles (wg_coop_padded).
enum class MatmulKernel { tiled, coop, wg_coop, wg_coop_padded };

struct Plan {
  MatmulKernel kernel = MatmulKernel::tiled;
  int index = 0;
  std::string name() const {
    const auto i = static_cast<std::size_t>(index);
    switch (kernel) {
      case MatmulKernel::coop: return coop_configs()[i].name;
      case MatmulKernel::wg_coop: return wg_coop_configs()[i].name;
      case MatmulKernel::wg_coop_padded: return std::string("p") + wg_coop_configs()[i].name;
      default: return tile_configs()[i].name;
    }
  }
};

// What one GPU remembers between matmuls: its tensor-core shape and the autotuner's choices
// (one per context: the streams of a GPU share them).
struct MatmulState {
  CoopShape coop;
  WgCoopShape wg_coop, wg_coop_bf16;  // by operand dtype
  const WgCoopShape& wg_coop_for(DType operands) const { return operands == DType::bf16 ? wg_coop_bf16 : wg_coop; }
  bool software = false;  // no autotuning unless KILN_AUTOTUNE=1
  std::unique_ptr<AutotuneCache> cache;
};

MatmulState& state_of(VulkanDevice& dev) {
  static std::mutex mutex;
  static std::unordered_map<const Context*, std::unique_ptr<MatmulState>> states;
  std::lock_guard lock(mutex);
  auto& s = states[&dev.context()];
  if (!s) {
    s = std::make_unique<MatmulState>();
    const PhysicalDeviceInfo& info = dev.context().info();
    s->coop = coop_shape(dev);
    s->wg_coop = wg_coop_shape(dev, DType::f16);
    s->wg_coop_bf16 = wg_coop_shape(dev, DType::bf16);
    s->software = info.on_host_cores();
    const std::string& dir = dev.pipelines().directory();
    s->cache = std::make_unique<AutotuneCache>(dir.empty() ? std::string() : dir + "/matmul_autotune.txt",
                                               info.name + " driver " + std::to_string(info.driver_version));
    if (log_enabled(spdlog::level::debug))
      logger().debug("vulkan matmul on {}: cooperative matrix {}x{}x{}, workgroup scope {}x{}x{} ({} threads), autotune {}",
                     info.name, s->coop.m, s->coop.n, s->coop.k, s->wg_coop.m, s->wg_coop.n, s->wg_coop.k,
                     s->wg_coop.threads, autotune_enabled(s->software));
  }
  return *s;
}

bool fits(const VulkanDevice& dev, const TileConfig& c) {
  const VkPhysicalDeviceLimits& l = dev.context().limits();
  return c.shared_bytes() <= l.maxComputeSharedMemorySize && c.threads() <= l.maxComputeWorkGroupInvocations &&
         c.threads() <= l.maxComputeWorkGroupSize[0];
}

bool fits(const VulkanDevice& dev, const CoopConfig& c, CoopShape s) {
  const VkPhysicalDeviceLimits& l = dev.context().limits();
  return c.valid_for(s) && c.shared_bytes(s) <= l.maxComputeSharedMemorySize &&
         c.threads() <= l.maxComputeWorkGroupInvocations && c.threads() <= l.maxComputeWorkGroupSize[0];
}

bool fits(const WgCoopConfig& c, const WgCoopShape& s, const Geometry& g) {
  return c.valid_for(s) && c.takes(g.m, g.n, g.k);
}

// Padded plans (see padded_wg_coop_config in vk_matmul.h). The copies cost two reads and writes
// of the operands and one of C; the padding costs its share of the product.
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

// The product on padded copies: each operand's matrices padded, as many as it has and in the
// same order, so its batch strides count padded matrices.
Geometry padded_geometry(const Geometry& g, const WgCoopConfig& c) {
  Geometry p = g;
  p.m = round_up(g.m, c.bm);
  p.n = round_up(g.n, c.bn);
  p.k = round_up(g.k, c.bk);
  for (int d = 0; d < g.dims; ++d) {
    p.a_stride[d] = g.a_stride[d] / (g.m * g.k) * (p.m * p.k);
    p.b_stride[d] = g.b_stride[d] / (g.k * g.n) * (p.k * p.n);
  }
  return p;
}

// c_words: 16-bit words per element of C (2 for an f32 C), which the copy out of C moves.
bool pads(const WgCoopConfig& c, const WgCoopShape& s, const Geometry& g, std::uint64_t c_words) {
  if (!c.tensor || !c.valid_for(s) || g.m == 0 || g.n == 0 || g.k == 0 || c.takes(g.m, g.n, g.k)) return false;
  // Batch strides of whole matrices (always so for contiguous operands; broadcast ones are 0).
  for (int d = 0; d < g.dims; ++d)
    if (g.a_stride[d] % (g.m * g.k) != 0 || g.b_stride[d] % (g.k * g.n) != 0) return false;
  // Every element of every padded operand (at least its original) within 32-bit indices.
  const Geometry p = padded_geometry(g, c);
  constexpr std::uint64_t kMax32 = 0xffffffffull;
  return g.batches <= kMax32 / (p.m * p.k) && g.batches <= kMax32 / (p.k * p.n) &&
         g.batches <= kMax32 / (p.m * p.n * c_words);
}

// The configurations that pad a product within the bound, in their listed order (fastest first),
// the one to take without timing first: the first listed whose padded work is within 5% of the
// least (on the H200, 4000^3 f16: 128 x 128 x 64 pads 2.4% more than 64 x 256 x 32 and runs
// 0.59 against 0.67-0.69 ms).
std::vector<int> padded_configs(const WgCoopShape& s, const Geometry& g, DType dtype, std::uint64_t c_words = 1) {
  const auto& wgs = wg_coop_configs();
  // bf16's other kernel is the tiled one (8x slower than the workgroup-scope kernel on the
  // H200); f16's is the subgroup-scope one (1.55x slower there).
  const double bound = (dtype == DType::bf16 ? 4.0 : 1.3) * static_cast<double>(g.m) * static_cast<double>(g.n) *
                       static_cast<double>(g.k);
  std::vector<int> within;  // listed order
  std::vector<double> work;
  for (std::size_t i = 0; i < wgs.size(); ++i) {
    if (!pads(wgs[i], s, g, c_words)) continue;
    const Geometry p = padded_geometry(g, wgs[i]);
    const double w = static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
    if (w > bound) continue;
    within.push_back(static_cast<int>(i));
    work.push_back(w);
  }
  if (within.empty()) return within;
  const double least = *std::min_element(work.begin(), work.end());
  const std::size_t pick = static_cast<std::size_t>(
      std::find_if(work.begin(), work.end(), [&](double w) { return w <= 1.05 * least; }) - work.begin());
  // The pick first, the others after it in their listed order.
  std::rotate(within.begin(), within.begin() + static_cast<std::ptrdiff_t>(pick),
              within.begin() + static_cast<std::ptrdiff_t>(pick) + 1);
  return within;
}

// Without autotuning: the first configuration that fits.
int default_coop(const VulkanDevice& dev, CoopShape s) {
  const auto& configs = coop_configs();
  for (std::size_t i = 0; i < configs.size(); ++i)
    if (fits(dev, configs[i], s)) return static_cast<int>(i);
  return -1;
}

// Without autotuning: big tiles when they still give many workgroups, smaller ones otherwise.
int heuristic_tile(const VulkanDevice& dev, const Geometry& g) {
  return heuristic_tile_config(dev, g.m, g.n, g.k, g.batches);
}

}  // namespace

int heuristic_tile_config(const VulkanDevice& dev, std::uint64_t m, std::uint64_t n, std::uint64_t k,
                          std::uint64_t batches) {
  const auto& configs = tile_configs();
  auto index = [&](const char* name) {
    for (std::size_t i = 0; i < configs.size(); ++i)
      if (std::string(configs[i].name) == name && fits(dev, configs[i])) return static_cast<int>(i);
    return -1;
  };
  const std::uint64_t work = m * n * batches;
  int pick = -1;
  // lavapipe runs a workgroup per CPU thread: the biggest tiles do the least overhead per FMA
  // (measured: 512^3 in 74 ms with 128x128x8 against 104 ms with 64x64 and 176 ms with 32x32).
  if (dev.context().info().on_host_cores())
    pick = index(work >= 256 * 256 ? "t128x128x8_8x8" : work >= 64 * 64 ? "t64x64x16_8x8" : "t32x32x16_4x4");
  else if (work >= 2048ull * 2048)
    // A k-major 8 x 16 per thread wins only without bounds checks (4096^3 on an H200: 3.08 ms
    // on whole tiles, 3.72 with checks, where the row-major double-buffered tiling takes 3.60).
    pick = index(m % 128 == 0 && n % 128 == 0 && k % 16 == 0 ? "t128x128x16_8x16k" : "t128x64x16_8x8_db");
  else if (work >= 512ull * 512)
    pick = index("t64x64x16_8x8");
  else
    pick = index("t32x32x16_4x4");
  if (pick >= 0) return pick;
  for (std::size_t i = configs.size(); i-- > 0;)
    if (fits(dev, configs[i])) return static_cast<int>(i);
  throw Error("matmul", "no tiled matmul configuration fits the limits of " + dev.info().name);
}

bool tile_config_fits(const VulkanDevice& dev, const TileConfig& c) { return fits(dev, c); }
CoopShape device_coop_shape(VulkanDevice& dev) { return state_of(dev).coop; }
WgCoopShape device_wg_coop_shape(VulkanDevice& dev, DType operands) { return state_of(dev).wg_coop_for(operands); }
bool coop_config_fits(const VulkanDevice& dev, const CoopConfig& c, CoopShape s) { return fits(dev, c, s); }

// Seconds per run of each candidate, by the host clock around complete submissions. Every
// pipeline is compiled first (the first run), then about 20 ms of runs bring the GPU's clocks
// up (they fall while the host compiles), then the candidates take turns over several rounds,
// each timing about a millisecond of runs, and each keeps its best round: a candidate timed
// once right after others (or after compiles) was seen to run several times slower.
std::vector<double> time_candidates(VulkanDevice& dev, std::size_t count, const std::function<void(std::size_t)>& run) {
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  auto timed = [&](std::size_t i, int reps) {
    const auto t0 = clock::now();
    for (int r = 0; r < reps; ++r) run(i);
    dev.synchronize();
    return std::max(seconds(t0), 1e-7) / reps;
  };
  for (std::size_t i = 0; i < count; ++i) timed(i, 1);
  for (const auto t0 = clock::now(); count > 0 && seconds(t0) < 20e-3;) timed(0, 4);
  std::vector<double> best(count);
  std::vector<int> reps(count);
  for (std::size_t i = 0; i < count; ++i) {
    best[i] = timed(i, 1);
    reps[i] = static_cast<int>(std::clamp(1e-3 / best[i], 1.0, 1000.0));
  }
  for (int round = 0; round < 3; ++round)
    for (std::size_t i = 0; i < count; ++i) best[i] = std::min(best[i], timed(i, reps[i]));
  return best;
}

namespace {

// Runs the product of one op in a chosen plan. C may be null: a launcher with an epilogue that
// does not store C leaves it out, one without writes the product to scratch (autotuner timing).
class Launcher {
 public:
  Launcher(VulkanDevice& dev, const OpIr& op, const Buffer* a, const Buffer* b, const Buffer* c, const Geometry& g,
           const MatmulEpilogue* epilogue = nullptr)
      : dev_(dev), op_(op), a_(a), b_(b), c_(c), g_(g), dtype_(op.inputs[0].dtype), out_(op.outputs[0].dtype),
        epilogue_(epilogue) {
    KILN_CHECK(out_ == dtype_ || (out_ == DType::f32 && (dtype_ == DType::f16 || dtype_ == DType::bf16)), "matmul",
               "internal error: a product of " + describe(op.inputs[0]) + " into " + describe(op.outputs[0]));
    variant_ = TileVariant{dtype_, g.k % 4 == 0, g.n % 4 == 0};
    variant_.trans_a = g.ta;
    variant_.trans_b = g.tb;
    variant_.c_f32 = out_ != dtype_;
  }

  void run(const Plan& p) {
    if (p.kernel == MatmulKernel::wg_coop_padded) return run_padded(p.index);
    if (args_.size() == 0) fill_args();
    std::uint32_t bm, bn;
    const KernelRequest k = request(p, &bm, &bn);
    const auto& max = dev_.context().limits().maxComputeWorkGroupCount;
    const std::uint64_t gx = (g_.n + bn - 1) / bn, gy = (g_.m + bm - 1) / bm;
    KILN_CHECK(gx <= max[0], "matmul", "N = " + std::to_string(g_.n) + " needs more workgroups than the device has");
    // The kernel loops over the row tiles and batches beyond the grid.
    const Groups groups{static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(std::min<std::uint64_t>(gy, max[1])),
                        static_cast<std::uint32_t>(std::min<std::uint64_t>(g_.batches, max[2]))};
    dev_.launch(k.key, k.name, k.source, args_, groups);
  }

  // The pipeline a plan launches (a padded plan: its workgroup-scope kernel, whose key does not
  // depend on the padded sizes), and its block tile. Reads nothing the launches change, so the
  // autotuner asks it of every candidate from several threads at once.
  KernelRequest request(const Plan& p, std::uint32_t* bm_out = nullptr, std::uint32_t* bn_out = nullptr) const {
    KernelRequest k;
    k.name = "matmul";
    std::uint32_t bm, bn;
    if (p.kernel == MatmulKernel::wg_coop || p.kernel == MatmulKernel::wg_coop_padded) {
      const WgCoopShape s = state_of(dev_).wg_coop_for(dtype_);
      const WgCoopConfig& c = wg_coop_configs()[static_cast<std::size_t>(p.index)];
      bm = c.bm, bn = c.bn;
      k.key = "matmul/wg_coop/" + std::string(dtype_name(dtype_)) + "/" + std::to_string(s.at(c.threads).threads) +
              "/" + c.name + out_suffix();
      VulkanDevice& dev = dev_;
      const DType dtype = dtype_, out = out_;
      k.source = [&dev, s, &c, dtype, out] { return wg_coop_matmul_source(dev.prelude(), s, c, dtype, out); };
    } else if (p.kernel == MatmulKernel::coop) {
      const CoopShape s = state_of(dev_).coop;
      const CoopConfig& c = coop_configs()[static_cast<std::size_t>(p.index)];
      bm = c.bm, bn = c.bn;
      k.key = "matmul/coop/" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + "/" +
              c.name + out_suffix();
      VulkanDevice& dev = dev_;
      const DType out = out_;
      k.source = [&dev, s, &c, out] { return coop_matmul_source(dev.prelude(), s, c, out); };
    } else {
      const TileConfig& c = tile_configs()[static_cast<std::size_t>(p.index)];
      bm = c.bm, bn = c.bn;
      TileVariant v = variant_;
      v.whole = v.vec_a && v.vec_b && g_.k > 0 && g_.m % c.bm == 0 && g_.n % c.bn == 0 && g_.k % c.bk == 0;
      k.key = std::string("matmul/tiled/") + c.name + "/" + dtype_name(dtype_) + (v.vec_a ? "/va" : "/sa") +
              (v.vec_b ? "/vb" : "/sb") + (v.whole ? "/whole" : "") + (v.trans_a ? "/ta" : "") +
              (v.trans_b ? "/tb" : "") + out_suffix();
      if (epilogue_) {
        k.key += "/fused/";
        k.key += epilogue_->key;
      }
      VulkanDevice& dev = dev_;
      const MatmulEpilogue* e = epilogue_;
      k.source = [&dev, &c, v, e] { return tiled_matmul_source(dev.prelude(), c, v, e); };
    }
    if (bm_out) *bm_out = bm;
    if (bn_out) *bn_out = bn;
    return k;
  }

  DType dtype() const { return dtype_; }
  const TileVariant& variant() const { return variant_; }
  // What names C's dtype in kernel keys and shape classes where it is not the operands'.
  std::string out_suffix() const { return out_ == dtype_ ? std::string() : std::string(">") + dtype_name(out_); }
  // 16-bit words per element of C.
  std::uint64_t c_words() const { return dtype_size(out_) / 2; }

 private:
  // The padded copies of one configuration's plan, kept across runs (the autotuner's).
  struct Padded {
    int index = -1;
    Geometry g;
    BufferPtr a, b, c;
    std::unique_ptr<Launcher> launcher;
  };

  // A and B into zero-padded whole tiles, the workgroup-scope kernel, C out of its padded copy.
  void run_padded(int index) {
    KILN_CHECK(!epilogue_, "matmul", "no fused epilogue for the cooperative-matrix kernels");
    const WgCoopConfig& config = wg_coop_configs()[static_cast<std::size_t>(index)];
    if (!padded_ || padded_->index != index) {
      padded_ = std::make_unique<Padded>();
      padded_->index = index;
      padded_->g = padded_geometry(g_, config);
      const Geometry& p = padded_->g;
      const std::size_t e = dtype_size(dtype_);
      padded_->a = dev_.memory().allocate(static_cast<std::size_t>(matrices(0) * p.m * p.k) * e);
      padded_->b = dev_.memory().allocate(static_cast<std::size_t>(matrices(1) * p.k * p.n) * e);
      padded_->c = dev_.memory().allocate(static_cast<std::size_t>(g_.batches * p.m * p.n) * dtype_size(out_));
      padded_->launcher =
          std::make_unique<Launcher>(dev_, op_, padded_->a.get(), padded_->b.get(), padded_->c.get(), padded_->g);
    }
    const Geometry& p = padded_->g;
    const auto u = [](std::uint64_t v) { return static_cast<std::uint32_t>(v); };  // pads() checked
    pad_matrix16(dev_, *a_, u(g_.m), u(g_.k), u(g_.k), *padded_->a, u(p.m), u(p.k), u(matrices(0)));
    pad_matrix16(dev_, *b_, u(g_.k), u(g_.n), u(g_.n), *padded_->b, u(p.k), u(p.n), u(matrices(1)));
    padded_->launcher->run(Plan{MatmulKernel::wg_coop, index});
    ensure_output();
    // The top-left m x n of each padded C into C: where C's rows are whole 16-byte vectors, the
    // padding copy with nothing to pad (eight 16-bit words per thread; an f32 is two), else the
    // strided copy (one element).
    const std::uint64_t w = c_words();
    if ((g_.n * w) % 8 == 0)
      return pad_matrix16(dev_, *padded_->c, u(g_.m), u(g_.n * w), u(p.n * w), *c_, u(g_.m), u(g_.n * w),
                          u(g_.batches), u(p.m * p.n * w));
    StridedCopy copy;
    copy.src = padded_->c.get();
    copy.dst = c_;
    copy.elem_bytes = dtype_size(out_);
    const auto i = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
    copy.push_dim(i(g_.batches), i(p.m * p.n), i(g_.m * g_.n));
    copy.push_dim(i(g_.m), i(p.n), i(g_.n));
    copy.push_dim(i(g_.n), 1, 1);
    run_strided_copy(dev_, "matmul", copy);
  }

  // The matrices operand i holds (fewer than the batches where it is broadcast).
  std::uint64_t matrices(int i) const {
    const std::uint64_t words = i == 0 ? g_.m * g_.k : g_.k * g_.n;
    return static_cast<std::uint64_t>(op_.inputs[static_cast<std::size_t>(i)].numel()) / words;
  }

  // Without C (autotuner timing of a product whose C an epilogue replaces): a scratch C.
  void ensure_output() {
    if (!c_ && !epilogue_) {
      scratch_ = dev_.memory().allocate(static_cast<std::size_t>(g_.m * g_.n * g_.batches) * dtype_size(out_));
      c_ = scratch_.get();
    }
  }

  void fill_args() {
    // An empty operand (K = 0) has no memory; the kernel never reads it then.
    const Buffer* operands[2] = {a_, b_};
    for (std::size_t i = 0; i < 2; ++i) {
      if (op_.inputs[i].numel() == 0)
        args_.address(0);
      else
        args_.buffer(*operands[i]);
    }
    ensure_output();
    args_.address(c_ ? VulkanDevice::address(*c_) : 0);
    args_.u64(g_.m).u64(g_.n).u64(g_.k).u64(g_.batches).u64(static_cast<std::uint64_t>(g_.dims));
    for (int d = 0; d < g_.dims; ++d) args_.u64(g_.size[d]).u64(g_.a_stride[d]).u64(g_.b_stride[d]);
    if (epilogue_)
      for (std::uint64_t w : epilogue_->args.words()) args_.u64(w);
  }

  VulkanDevice& dev_;
  const OpIr& op_;
  const Buffer *a_, *b_, *c_;
  const Geometry& g_;
  DType dtype_, out_;  // of the operands, of C
  const MatmulEpilogue* epilogue_;
  TileVariant variant_;
  BufferPtr scratch_;
  LaunchArgs args_;
  std::unique_ptr<Padded> padded_;
};

std::vector<double> time_plans(VulkanDevice& dev, Launcher& launcher, const std::vector<Plan>& plans) {
  std::vector<KernelRequest> requests;
  for (const Plan& p : plans) requests.push_back(launcher.request(p));
  compile_in_parallel(dev, requests);
  return time_candidates(dev, plans.size(), [&](std::size_t i) { launcher.run(plans[i]); });
}

}  // namespace

const char* glsl_matmul_common() {
  return R"(
// Element offsets of A and B for output batch bz: per batch dim, innermost last, the argument
// block holds (size, A stride, B stride) from word 8 (strides 0 where an operand broadcasts).
void mm_batch_offsets(uint bz, uint nb, out uint64_t a_off, out uint64_t b_off) {
  a_off = 0ul;
  b_off = 0ul;
  uint rest = bz;
  for (uint d = nb; d > 0u; --d) {
    const uint w = 8u + 3u * (d - 1u);
    const uint size = arg_u32(w);
    const uint idx = rest % size;
    rest /= size;
    a_off += uint64_t(idx) * arg_u64(w + 1u);
    b_off += uint64_t(idx) * arg_u64(w + 2u);
  }
}
// One double-buffered step: the next step's loads are in flight during the math.
#define STEP2(k0, cur, nxt) { \
  const bool more = (k0) + BK < K; \
  if (more) LOAD_STEP((k0) + BK); \
  MATH(cur); \
  if (more) STORE_STEP(nxt); \
  barrier(); }
)";
}

namespace {

// The largest power of two, up to 256, that divides M, N and K: which whole-tile (workgroup-
// scope) configurations take a product; shapes of one class agree on it.
std::uint64_t common_tile(const Geometry& g) {
  std::uint64_t t = 256;
  while (t > 1 && (g.m % t || g.n % t || g.k % t)) t /= 2;
  return t;
}

std::string shape_class(const Launcher& l, const Geometry& g, bool coop, bool wg_coop) {
  return std::string(dtype_name(l.dtype())) + l.out_suffix() + (l.variant().vec_a ? " va" : " sa") +
         (l.variant().vec_b ? "vb" : "sb") +
         (l.variant().trans_a ? " ta" : "") + (l.variant().trans_b ? " tb" : "") +
         (coop ? " coop" : "") + (wg_coop ? " wg" + std::to_string(common_tile(g)) : "") + " m" +
         std::to_string(size_bucket(g.m)) + " n" + std::to_string(size_bucket(g.n)) + " k" +
         std::to_string(size_bucket(g.k)) + " z" + std::to_string(size_bucket(g.batches));
}

Plan choose(VulkanDevice& dev, MatmulState& state, Launcher& launcher, const Geometry& g) {
  const auto& configs = tile_configs();
  const auto& coops = coop_configs();
  const auto& wgs = wg_coop_configs();
  const DType dtype = launcher.dtype();
  // Only the tiled kernel reads a transposed operand (transposed_matmul_dtypes).
  const bool row_major = !g.ta && !g.tb;
  const bool tensor_cores = row_major && g_coop_enabled.load() && g.k > 0 && g.k % 8 == 0 && g.n % 8 == 0;
  const bool coop = tensor_cores && dtype == DType::f16 && state.coop.m != 0 && default_coop(dev, state.coop) >= 0;
  const WgCoopShape& wg_shape = state.wg_coop_for(dtype);
  const bool wg_available =
      row_major && g_coop_enabled.load() && (dtype == DType::f16 || dtype == DType::bf16) && wg_shape.threads != 0;
  const bool wg_coop = tensor_cores && wg_available;
  auto wg_fits = [&](std::size_t i) { return wg_coop && i < wgs.size() && fits(wgs[i], wg_shape, g); };
  // Padded copies take any K and N (the copies make them multiples of the tile).
  const std::vector<int> paddings =
      wg_available ? padded_configs(wg_shape, g, dtype, launcher.c_words()) : std::vector<int>{};
  const int padded = paddings.empty() ? -1 : paddings.front();  // the pick without timing
  if (const int forced = g_forced_wg_coop.load(); forced >= 0) {
    // Forced (tests): the configuration, padded where it does not take the product as it is.
    if (wg_fits(static_cast<std::size_t>(forced))) return Plan{MatmulKernel::wg_coop, forced};
    if (wg_available && static_cast<std::size_t>(forced) < wgs.size() &&
        pads(wgs[static_cast<std::size_t>(forced)], wg_shape, g, launcher.c_words()))
      return Plan{MatmulKernel::wg_coop_padded, forced};
  }
  if (const int forced = g_forced_coop.load(); coop && forced >= 0 && forced < static_cast<int>(coops.size()) &&
                                               fits(dev, coops[static_cast<std::size_t>(forced)], state.coop))
    return Plan{MatmulKernel::coop, forced};
  if (const int forced = g_forced_tile.load(); forced >= 0 && forced < static_cast<int>(configs.size()))
    return Plan{MatmulKernel::tiled, forced};
  // A configuration by name (KILN_MATMUL_CONFIG, or the autotune cache), where it applies.
  auto named = [&](std::string_view name) -> std::optional<Plan> {
    for (std::size_t i = 0; i < wgs.size(); ++i)
      if (wgs[i].name == name && wg_fits(i)) return Plan{MatmulKernel::wg_coop, static_cast<int>(i)};
    for (int i : paddings)
      if (Plan{MatmulKernel::wg_coop_padded, i}.name() == name) return Plan{MatmulKernel::wg_coop_padded, i};
    for (std::size_t i = 0; coop && i < coops.size(); ++i)
      if (coops[i].name == name && fits(dev, coops[i], state.coop)) return Plan{MatmulKernel::coop, static_cast<int>(i)};
    for (std::size_t i = 0; i < configs.size(); ++i)
      if (configs[i].name == name && fits(dev, configs[i])) return Plan{MatmulKernel::tiled, static_cast<int>(i)};
    return std::nullopt;
  };
  // KILN_MATMUL_CONFIG=<name> picks a configuration wherever it applies (for measurements).
  if (const char* env = std::getenv("KILN_MATMUL_CONFIG"); env && *env)
    if (auto plan = named(env)) return *plan;
  if (!autotune_enabled(state.software)) {
    // Without timing, as measured on the H200: a workgroup-scope configuration with tensor loads
    // (listed fastest first; 1.6x the subgroup kernel), or one on padded copies, else the
    // subgroup kernel, else a workgroup-scope one with plain loads (2.5x slower than the
    // subgroup kernel, 2x faster than the tiled one), else the tiled kernel.
    for (bool tensor : {true, false}) {
      if (!tensor && padded >= 0) return Plan{MatmulKernel::wg_coop_padded, padded};
      if (!tensor && coop) return Plan{MatmulKernel::coop, default_coop(dev, state.coop)};
      for (std::size_t i = 0; i < wgs.size(); ++i)
        if (wgs[i].tensor == tensor && wg_fits(i)) return Plan{MatmulKernel::wg_coop, static_cast<int>(i)};
    }
    return Plan{MatmulKernel::tiled, heuristic_tile(dev, g)};
  }

  const std::string key = shape_class(launcher, g, coop, wg_coop);
  if (auto hit = state.cache->lookup(key))
    if (auto plan = named(*hit)) return *plan;
  std::vector<Plan> candidates;
  for (std::size_t i = 0; i < wgs.size(); ++i)
    if (wg_fits(i)) candidates.push_back(Plan{MatmulKernel::wg_coop, static_cast<int>(i)});
  // Every padding within the bound: a faster configuration may win over one that pads less.
  for (int i : paddings) candidates.push_back(Plan{MatmulKernel::wg_coop_padded, i});
  for (std::size_t i = 0; coop && i < coops.size(); ++i)
    if (fits(dev, coops[i], state.coop)) candidates.push_back(Plan{MatmulKernel::coop, static_cast<int>(i)});
  for (std::size_t i = 0; i < configs.size(); ++i)
    if (fits(dev, configs[i])) candidates.push_back(Plan{MatmulKernel::tiled, static_cast<int>(i)});
  // Where every candidate gives the same bits (the tiled configurations: f32), they compile in
  // the background while the class runs on the heuristic's choice; the timing itself (a few
  // milliseconds) waits for the first use after they are made.
  const bool same_bits =
      std::all_of(candidates.begin(), candidates.end(), [](const Plan& p) { return p.kernel == MatmulKernel::tiled; });
  if (same_bits && background_autotune_enabled() && !dev.background_compiler().ready("matmul " + key, [&] {
        std::vector<KernelRequest> requests;
        for (const Plan& p : candidates) requests.push_back(launcher.request(p));
        return requests;
      }))
    return Plan{MatmulKernel::tiled, heuristic_tile(dev, g)};
  const std::vector<double> times = time_plans(dev, launcher, candidates);
  Plan best = candidates.front();
  double best_s = 0;
  std::string report;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    report += ' ';
    report += candidates[i].name();
    report += '=';
    report += std::to_string(times[i] * 1e6);
    report += "us";
    if (best_s == 0 || times[i] < best_s) best = candidates[i], best_s = times[i];
  }
  if (log_enabled(spdlog::level::info)) logger().info("vulkan matmul autotune [{}]: {} ({})", key, best.name(), report);
  state.cache->store(key, best.name());
  return best;
}

Geometry checked_geometry(const OpIr& op) {
  const Geometry g = geometry(op);
  constexpr std::uint64_t kMax32 = 0xffffffffull;
  KILN_CHECK(g.m * g.k <= kMax32 && g.k * g.n <= kMax32 && g.m * g.n <= kMax32 && g.batches <= kMax32, "matmul",
             "matrices over 2^32 elements are not supported on Vulkan yet (" + describe(op.inputs[0]) + " @ " +
                 describe(op.inputs[1]) + ")");
  return g;
}

void matmul_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  if (op.outputs[0].numel() == 0) return;
  const Geometry g = checked_geometry(op);
  Launcher launcher(dev, op, args.inputs[0], args.inputs[1], args.outputs[0], g);
  // Timing runs write the output too; the chosen plan runs last, so the result is its own.
  launcher.run(choose(dev, state_of(dev), launcher, g));
}

}  // namespace

bool matmul_with_epilogue(VulkanDevice& dev, const OpIr& op, const Buffer* a, const Buffer* b, const Buffer* c,
                          const MatmulEpilogue& epilogue) {
  if (op.outputs[0].numel() == 0) return true;
  const Geometry g = checked_geometry(op);
  KILN_CHECK(g.m * g.n * g.batches <= 0xffffffffull, "matmul",
             "a fused epilogue over 2^32 elements is not supported on Vulkan yet (" + describe(op.outputs[0]) + ")");
  // The autotuner times the plain product (an epilogue may update its input in place, so it runs
  // once): into C when C is kept, else into scratch, made only if it times at all.
  Launcher plain(dev, op, a, b, epilogue.store_c ? c : nullptr, g);
  const Plan plan = choose(dev, state_of(dev), plain, g);
  // Only the tiled kernel: the tensor-core kernels hold the product in cooperative matrices,
  // which take no per-element code. (Tried on the H200: the workgroup-scope kernel storing its
  // tile, then reading it back through the epilogue, made relu(A @ B + bias) of 4096^3 f16
  // 0.644-0.654 ms against 0.570-0.585 for the product and separate elementwise kernels: with one
  // workgroup of 255-register threads per SM, the read-back pass runs at a fraction of the
  // bandwidth a kernel of its own gets.)
  if (plan.kernel != MatmulKernel::tiled) return false;
  Launcher(dev, op, a, b, c, g, &epilogue).run(plan);
  return true;
}

int padded_wg_coop_config(const WgCoopShape& shape, std::uint64_t m, std::uint64_t n, std::uint64_t k, DType operands) {
  Geometry g;
  g.m = m, g.n = n, g.k = k;
  const std::vector<int> paddings = padded_configs(shape, g, operands);
  return paddings.empty() ? -1 : paddings.front();
}

AutotuneCache& tiled_autotune_cache(VulkanDevice& dev) { return *state_of(dev).cache; }
bool tiled_autotuning(VulkanDevice& dev) { return autotune_enabled(state_of(dev).software); }
int forced_coop_config() {
  const int forced = g_forced_coop.load();
  return forced < static_cast<int>(coop_configs().size()) ? forced : -1;
}

bool coop_enabled() { return g_coop_enabled.load(); }

int forced_tile_config() {
  const int forced = g_forced_tile.load();
  return forced < static_cast<int>(tile_configs().size()) ? forced : -1;
}

void force_tile_config(int index) { g_forced_tile.store(index); }
void force_coop_config(int index) { g_forced_coop.store(index); }
void force_wg_coop_config(int index) { g_forced_wg_coop.store(index); }
void set_coop_enabled(bool enabled) { g_coop_enabled.store(enabled); }

DTypeSet transposed_matmul_dtypes(const VulkanDevice& dev) {
  DTypeSet dtypes{DType::f32};
  if (coop_shape(dev).m == 0 && wg_coop_shape(dev, DType::f16).threads == 0) dtypes.add(DType::f16);
  if (wg_coop_shape(dev, DType::bf16).threads == 0) dtypes.add(DType::bf16);
  return dtypes;
}

void register_linalg_kernels(KernelTable& t) { t.set(OpKind::matmul, matmul_kernel); }

}  // namespace kiln::vk
