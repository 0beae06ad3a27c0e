// The convolution as an implicit GEMM on the tiled matmul kernel (see vk_conv_gemm.h).
//
// Per batch bz = n * G + g (the grid's z dimension): A is group g's weights [K/G, C/G * kk]
// (row-major, as the weight lies in memory), B the columns of image n's channels of group g,
// C rows g * K/G.. of y's image n, which lie one after another: C's batches are contiguous, as
// the tiled kernel writes them. The columns are never written: B's loader finds, for row r =
// c * kk + j of the columns (channel c, kernel offset j) and column l (window l), the image
// element window l reads at offset j, by multiply-high divisions (vk_conv.h), or 0 over the
// padding. Only a pointwise convolution (1x1 kernel, stride 1, no padding) reads B as the
// matrix it is: there the image is the columns. Configurations are the tiled matmul's,
// autotuned per shape class of convolutions in the matmul's autotune memory; for 16-bit floats
// on GPUs with tensor cores the cooperative-matrix kernel's configurations (f16, its B words
// gathered eight elements at a time, the same argument block) and the explicit GEMM (unfold +
// the matmul op) are candidates too.
//
// Argument block: the tiled kernel's (0 A, 1 B, 2 C, 3 M, 4 N, 5 K, 6 batches, 7 batch dims,
// then per dim size, A stride, B stride), then 18 words of the convolution: bias address (0:
// none), image plane, divisors by kk, kernel width, kernel height, output width, output height,
// the window (vk_conv.h); then an epilogue's parameters (kConvEpilogueBase).
#include "kiln/devices/vulkan/vk_conv_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include "kiln/devices/vulkan/vk_autotune.h"
#include "kiln/devices/vulkan/vk_parallel_compile.h"
#include "kiln/devices/vulkan/vk_conv.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"
#include "kiln/base/log.h"
#include "kiln/ops/attrs_window.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace {

constexpr std::size_t kConvWords = 18;  // kConvEpilogueBase counts them

std::atomic<std::uint64_t> g_coop_convolutions{0};

// The GEMM of one conv op: batches = N * G products of M x K by K x N' (N' = L windows).
struct ConvGemm {
  WindowGeometry window;
  std::uint64_t images = 1, groups = 1, m = 1, k = 1, l = 1, channels = 1;
  DType dtype = DType::f32;
  bool gather = true;  // false: pointwise, B is the image
  std::uint64_t batches() const { return images * groups; }
};

ConvGemm conv_gemm(const OpIr& op) {
  const TensorIr &x = op.inputs[0], &w = op.inputs[1], &y = op.outputs[0];
  const ConvAttrs a = ConvAttrs::decode(op);
  const int s = a.dims;
  ConvGemm c;
  WindowGeometry& g = c.window;
  for (int d = 0; d < s; ++d) {
    const int e = 3 - s + d;  // missing leading dims keep size 1
    g.image[e] = x.shape[2 + d];
    g.out[e] = y.shape[2 + d];
    g.kernel[e] = w.shape[2 + d];
    g.stride[e] = a.stride[d];
    g.padding[e] = a.padding[d];
    g.dilation[e] = a.dilation[d];
  }
  g.batch_channels = x.shape[0] * x.shape[1];
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  c.images = u(x.shape[0]);
  c.groups = u(a.groups);
  c.channels = u(x.shape[1]);
  c.m = u(w.shape[0]) / c.groups;
  c.k = u(w.shape[1] * g.volume());
  c.l = u(g.windows());
  c.dtype = x.dtype;
  bool pointwise = true;
  for (int e = 0; e < 3; ++e) pointwise = pointwise && g.kernel[e] == 1 && g.stride[e] == 1 && g.padding[e] == 0;
  c.gather = !pointwise;
  return c;
}

ConvGemm checked_conv_gemm(const OpIr& op) {
  KILN_CHECK(op.inputs[0].dtype == DType::f32 || is_half(op.inputs[0].dtype), "conv",
             "no Vulkan convolution for " + describe(op.inputs[0]));
  const ConvGemm c = conv_gemm(op);
  check_window_reach("conv", c.window, op.inputs[0]);
  // Element indices within an operand, and the epilogue's flat index of y, are 32-bit.
  for (const TensorIr* t : {&op.inputs[0], &op.inputs[1], &op.outputs[0]}) check_32bit_elements("conv", t->numel());
  return c;
}

// The window's geometry, read from the argument block once per invocation (mm_hooks_init), and
// each batch's first bias element (mm_hooks_batch): what both kernels' gathers start from.
std::string window_hooks_glsl() {
  std::string s = glsl_fast_div();
  s += glsl_window_args();
  s += R"(
uint64_t cv_bias;
uint cv_plane, cv_bias_first;
Div cv_by_kk, cv_by_kw, cv_by_kh, cv_by_ow, cv_by_oh;
ivec3 cv_pad;
uvec3 cv_stride, cv_dil, cv_size;
void mm_hooks_init() {
  const uint at = 8u + 3u * arg_u32(7u);
  cv_bias = arg_u64(at);
  cv_plane = arg_u32(at + 1u);
  cv_by_kk = div_at(at + 2u); cv_by_kw = div_at(at + 4u); cv_by_kh = div_at(at + 6u);
  cv_by_ow = div_at(at + 8u); cv_by_oh = div_at(at + 10u);
  window_at(at + 12u, cv_pad, cv_stride, cv_dil, cv_size);
}
// The batch's group g starts at A row g * M: its first bias element.
void mm_hooks_batch(uint bz, uint64_t a_off) { cv_bias_first = uint(a_off / uint64_t(arg_u32(5u))); }
)";
  return s;
}

// The GLSL of the tiled kernel's B gather and row bias (TileVariant's hooks), after its access macros.
std::string hooks_glsl(const ConvGemm& c, bool bias) {
  std::string s = window_hooks_glsl();
  if (bias) s += "float mm_row_bias(uint row) { PTR1 b = PTR1(cv_bias); return LOAD1(b, cv_bias_first + row); }\n";
  if (c.gather)
    s += R"(
// Columns col..col + 3 of row k of the columns: channel c at kernel offset j of windows col..
vec4 load_b(PTR1 B, PTR4 B4, uint K, uint N, uint k, uint col) {
  vec4 r = vec4(0.0);
  if (k >= K) return r;
  const uint c = div_by(k, cv_by_kk), j = k - c * cv_by_kk.d;
  const uint u = div_by(j, cv_by_kw), jd = div_by(u, cv_by_kh);
  const ivec3 off = ivec3(uvec3(jd, u - jd * cv_by_kh.d, j - u * cv_by_kw.d) * cv_dil) - cv_pad;
  const uint t = div_by(col, cv_by_ow), od0 = div_by(t, cv_by_oh);
  uvec3 o = uvec3(od0, t - od0 * cv_by_oh.d, col - t * cv_by_ow.d);
  const uint base = c * cv_plane;
  [[unroll]] for (uint e = 0u; e < 4u; ++e) {
    const ivec3 at = ivec3(o * cv_stride) + off;
    // Over the padding (a negative coordinate wraps to a large one) the element stays 0.
    if (col + e < N && all(lessThan(uvec3(at), cv_size)))
      r[e] = LOAD1(B, base + (uint(at.x) * cv_size.y + uint(at.y)) * cv_size.z + uint(at.z));
    if (++o.z == cv_by_ow.d) { o.z = 0u; if (++o.y == cv_by_oh.d) { o.y = 0u; ++o.x; } }
  }
  return r;
}
)";
  return s;
}

// The cooperative-matrix kernel's B gather: eight f16 columns of a row of the columns as one
// 16-byte word, read element by element from the image (the tiled kernel's load_b, eight wide).
std::string coop_gather_glsl() {
  std::string s = window_hooks_glsl();
  s += R"(
// The output coordinates (depth, row, column) of window col.
uvec3 mm_gather_window(uint col) {
  const uint t = div_by(col, cv_by_ow), od0 = div_by(t, cv_by_oh);
  return uvec3(od0, t - od0 * cv_by_oh.d, col - t * cv_by_ow.d);
}
uvec4 mm_gather_b8(uint64_t image, uint k, uint col, uint N, uvec3 window) {
  U16s X = U16s(image);
  const uint c = div_by(k, cv_by_kk), j = k - c * cv_by_kk.d;
  const uint u = div_by(j, cv_by_kw), jd = div_by(u, cv_by_kh);
  const ivec3 off = ivec3(uvec3(jd, u - jd * cv_by_kh.d, j - u * cv_by_kw.d) * cv_dil) - cv_pad;
  uvec3 o = window;
  const uint base = c * cv_plane;
  uint h[8];
  [[unroll]] for (uint e = 0u; e < 8u; ++e) {
    const ivec3 at = ivec3(o * cv_stride) + off;
    h[e] = 0u;  // over the padding (a negative coordinate wraps to a large one) and past N
    if (col + e < N && all(lessThan(uvec3(at), cv_size)))
      h[e] = uint(X.v[base + (uint(at.x) * cv_size.y + uint(at.y)) * cv_size.z + uint(at.z)]);
    if (++o.z == cv_by_ow.d) { o.z = 0u; if (++o.y == cv_by_oh.d) { o.y = 0u; ++o.x; } }
  }
  return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}
)";
  return s;
}

// What runs a convolution: a tiled configuration, a cooperative-matrix one (f16 on GPUs with
// tensor cores), or the explicit GEMM (unfold + the matmul op).
struct ConvPlan {
  enum Kind { tiled, coop, explicit_gemm } kind = tiled;
  int index = 0;  // into tile_configs() or coop_configs()
};

// Runs one conv op's GEMM in a tiled or cooperative-matrix configuration. y may be null: with
// an epilogue that does not store C it is left out; without one the product goes to scratch
// (autotuner timing).
class ConvLauncher {
 public:
  ConvLauncher(VulkanDevice& dev, const ConvGemm& c, const Buffer* x, const Buffer* w, const Buffer* bias,
               const Buffer* y, const MatmulEpilogue* epilogue = nullptr)
      : dev_(dev), c_(c), x_(x), w_(w), bias_(bias), y_(y), epilogue_(epilogue) {
    variant_ = TileVariant{c.dtype, c.k % 4 == 0, c.l % 4 == 0};
    variant_.gather_b = c.gather;
    variant_.row_bias = bias != nullptr;
  }

  void run(const ConvPlan& plan) {
    if (plan.kind == ConvPlan::coop) return run_coop(plan.index);
    run_tiled(plan.index);
  }

  const TileVariant& variant() const { return variant_; }

 private:
  // The cooperative-matrix kernel with B gathered (or read as it is, pointwise), then the bias
  // as an add (its stores take no epilogue). f16 only: conv_kernel's choice checks the rest
  // (coop_eligible).
  void run_coop(int index) {
    if (args_.size() == 0) fill_args();
    const CoopConfig& config = coop_configs()[static_cast<std::size_t>(index)];
    const KernelRequest k = request(ConvPlan{ConvPlan::coop, index});
    dev_.launch(k.key, k.name, k.source, args_, groups(config.bm, config.bn));
    g_coop_convolutions.fetch_add(1, std::memory_order_relaxed);
    if (bias_) {
      const auto i = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
      const Shape ys{i(c_.images), i(c_.groups * c_.m), i(c_.l)};
      // KernelArgs holds mutable pointers: y is this op's output, the bias is only read.
      Buffer* y = const_cast<Buffer*>(y_);
      run_step(dev_, OpKind::add,
               {{step_tensor(ys, c_.dtype), y}, {step_tensor(Shape{i(c_.groups * c_.m), 1}, c_.dtype),
                                                  const_cast<Buffer*>(bias_)}},
               step_tensor(ys, c_.dtype), y);
    }
  }

  // The grid: windows over x, row tiles over y (the kernel loops over those beyond the grid's
  // limit), batches over z (likewise).
  Groups groups(std::uint64_t bm, std::uint64_t bn) const {
    const auto& max = dev_.context().limits().maxComputeWorkGroupCount;
    const std::uint64_t gx = (c_.l + bn - 1) / bn, gy = (c_.m + bm - 1) / bm;
    KILN_CHECK(gx <= max[0], "conv", std::to_string(c_.l) + " windows need more workgroups than the device has");
    return Groups{static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(std::min<std::uint64_t>(gy, max[1])),
                  static_cast<std::uint32_t>(std::min<std::uint64_t>(c_.batches(), max[2]))};
  }

  void run_tiled(int index) {
    if (args_.size() == 0) fill_args();
    const TileConfig& t = tile_configs()[static_cast<std::size_t>(index)];
    const KernelRequest k = request(ConvPlan{ConvPlan::tiled, index});
    dev_.launch(k.key, k.name, k.source, args_, groups(t.bm, t.bn));
  }

 public:
  // The pipeline a tiled or cooperative-matrix plan launches; reads nothing the launches
  // change, so the autotuner asks it of every candidate from several threads at once.
  KernelRequest request(const ConvPlan& plan) const {
    KernelRequest k;
    k.name = "conv";
    VulkanDevice& dev = dev_;
    if (plan.kind == ConvPlan::coop) {
      const CoopShape shape = device_coop_shape(dev_);
      const CoopConfig& config = coop_configs()[static_cast<std::size_t>(plan.index)];
      k.key = "conv/coop/" + std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" + std::to_string(shape.k) +
              "/" + config.name + (c_.gather ? "/gather" : "/direct");
      const bool gather = c_.gather;
      k.source = [&dev, shape, &config, gather] {
        return gather ? conv_coop_source(dev.prelude(), shape, config)
                      : coop_matmul_source(dev.prelude(), shape, config, DType::f16);
      };
      return k;
    }
    const TileConfig& t = tile_configs()[static_cast<std::size_t>(plan.index)];
    TileVariant v = variant_;
    // Whole tiles drop the bounds checks of A's loads and C's stores; the gather checks its own.
    v.whole = v.vec_a && v.vec_b && c_.m % t.bm == 0 && c_.l % t.bn == 0 && c_.k % t.bk == 0;
    k.key = std::string("conv/tiled/") + t.name + "/" + dtype_name(c_.dtype) + (v.vec_a ? "/va" : "/sa") +
            (v.vec_b ? "/vb" : "/sb") + (v.whole ? "/whole" : "") + (v.gather_b ? "/gather" : "/direct") +
            (v.row_bias ? "/bias" : "");
    if (epilogue_) {
      k.key += "/fused/";
      k.key += epilogue_->key;
    }
    const ConvGemm& c = c_;
    const MatmulEpilogue* e = epilogue_;
    k.source = [&dev, &t, v, &c, e] {
      return tiled_matmul_source(dev.prelude(), t, v, e, v.hooked() ? hooks_glsl(c, v.row_bias) : std::string());
    };
    return k;
  }

 private:
  void fill_args() {
    if (!y_ && !epilogue_) {
      scratch_ = dev_.memory().allocate(static_cast<std::size_t>(c_.batches() * c_.m * c_.l) * dtype_size(c_.dtype));
      y_ = scratch_.get();
    }
    const Buffer *x = x_, *w = w_, *bias = bias_, *y = y_;
    const WindowGeometry& g = c_.window;
    const std::uint64_t plane = static_cast<std::uint64_t>(g.plane()), cg = c_.channels / c_.groups;
    args_.buffer(*w).buffer(*x).address(y ? VulkanDevice::address(*y) : 0);
    args_.u64(c_.m).u64(c_.l).u64(c_.k).u64(c_.batches());
    // Batch dims (size, A stride, B stride), innermost last; dims of size 1 left out.
    struct Dim {
      std::uint64_t size, a, b;
    };
    std::vector<Dim> dims;
    if (c_.images > 1) dims.push_back({c_.images, 0, c_.channels * plane});
    if (c_.groups > 1) dims.push_back({c_.groups, c_.m * c_.k, cg * plane});
    args_.u64(dims.size());
    for (const Dim& d : dims) args_.u64(d.size).u64(d.a).u64(d.b);
    const std::size_t at = args_.size();
    args_.address(bias ? VulkanDevice::address(*bias) : 0).u64(plane);
    push_div(args_, g.volume());
    push_div(args_, g.kernel[2]);
    push_div(args_, g.kernel[1]);
    push_div(args_, g.out[2]);
    push_div(args_, g.out[1]);
    push_window(args_, g);
    KILN_CHECK(args_.size() - at == kConvWords, "conv", "internal: the argument block's layout changed");
    if (epilogue_)
      for (std::uint64_t word : epilogue_->args.words()) args_.u64(word);
  }

  VulkanDevice& dev_;
  const ConvGemm& c_;
  const Buffer *x_, *w_, *bias_, *y_;
  const MatmulEpilogue* epilogue_;
  TileVariant variant_;
  BufferPtr scratch_;
  LaunchArgs args_;
};

std::string shape_class(const ConvGemm& c, const TileVariant& v) {
  return std::string("conv ") + dtype_name(c.dtype) + (c.gather ? " gather" : " direct") + (v.vec_a ? " va" : " sa") +
         (v.vec_b ? "vb" : "sb") + " m" + std::to_string(size_bucket(c.m)) + " n" + std::to_string(size_bucket(c.l)) +
         " k" + std::to_string(size_bucket(c.k)) + " z" + std::to_string(size_bucket(c.batches()));
}

// On GPUs with tensor cores a 16-bit convolution may run faster on them: as the implicit GEMM
// on the cooperative-matrix kernel (f16, where the columns' K and the windows are whole 16-byte
// words), or as the explicit GEMM: unfold writes the columns, the matmul op reads them with its
// tensor-core kernels (workgroup-scope ones too, and bf16), the bias is one add more. The
// autotuner times both beside the tiled configurations (no epilogue takes them: only f32
// convolutions anchor one).
constexpr const char* kExplicitName = "explicit";

bool explicit_candidate(VulkanDevice& dev, DType t) {
  return is_half(t) && (device_coop_shape(dev).m != 0 || device_wg_coop_shape(dev, t).threads != 0);
}

// The cooperative-matrix shape a convolution can take, or none (m = 0).
CoopShape coop_eligible(VulkanDevice& dev, const ConvGemm& c) {
  if (!coop_enabled() || c.dtype != DType::f16 || c.k == 0 || c.k % 8 != 0 || c.l % 8 != 0) return {};
  return device_coop_shape(dev);
}

void run_explicit(VulkanDevice& dev, const OpIr& op, const ConvGemm& c, const KernelArgs& args) {
  const auto i = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  const std::int64_t n = i(c.images), groups = i(c.groups), m = i(c.m), k = i(c.k), l = i(c.l);
  const DType t = c.dtype;
  BufferPtr cols;
  Buffer* b = args.inputs[0];  // a pointwise convolution's columns are the image
  if (c.gather) {
    const Shape& w = op.inputs[1].shape;
    const OpAttrs a = ConvAttrs::decode(op).window(w.begin() + 2).encode(OpKind::unfold);
    cols = dev.memory().allocate(static_cast<std::size_t>(n * groups * k * l) * dtype_size(t));
    run_step(dev, OpKind::unfold, {{op.inputs[0], args.inputs[0]}}, step_tensor(Shape{n, groups * k, l}, t), cols.get(),
             a);
    b = cols.get();
  }
  Buffer* y = args.outputs[0];
  run_step(dev, OpKind::matmul,
           {{step_tensor(Shape{groups, m, k}, t), args.inputs[1]}, {step_tensor(Shape{n, groups, k, l}, t), b}},
           step_tensor(Shape{n, groups, m, l}, t), y);
  if (op.inputs.size() > 2)
    run_step(dev, OpKind::add,
             {{step_tensor(Shape{n, groups * m, l}, t), y}, {step_tensor(Shape{groups * m, 1}, t), args.inputs[2]}},
             step_tensor(Shape{n, groups * m, l}, t), y);
}

// The plan of a configuration's name (as the autotuner and KILN_MATMUL_CONFIG name them), if
// it is one this convolution can take.
std::optional<ConvPlan> named_plan(const VulkanDevice& dev, const std::string& name, bool explicit_allowed,
                                   CoopShape coop) {
  if (explicit_allowed && name == kExplicitName) return ConvPlan{ConvPlan::explicit_gemm, 0};
  const auto& tiles = tile_configs();
  for (std::size_t i = 0; i < tiles.size(); ++i)
    if (tiles[i].name == name && tile_config_fits(dev, tiles[i])) return ConvPlan{ConvPlan::tiled, static_cast<int>(i)};
  const auto& coops = coop_configs();
  for (std::size_t i = 0; coop.m != 0 && i < coops.size(); ++i)
    if (coops[i].name == name && coop_config_fits(dev, coops[i], coop))
      return ConvPlan{ConvPlan::coop, static_cast<int>(i)};
  return std::nullopt;
}

const char* plan_name(const ConvPlan& p) {
  if (p.kind == ConvPlan::explicit_gemm) return kExplicitName;
  if (p.kind == ConvPlan::coop) return coop_configs()[static_cast<std::size_t>(p.index)].name;
  return tile_configs()[static_cast<std::size_t>(p.index)].name;
}

// The plan of a convolution: forced (tests), named (KILN_MATMUL_CONFIG), the autotuner's (timed
// on `launcher`, which writes the plain convolution), or the heuristic's (tiled). Where
// `explicit_run` is given (a plain 16-bit convolution, no epilogue) the tensor-core plans are
// candidates too.
ConvPlan choose(VulkanDevice& dev, const ConvGemm& c, ConvLauncher& launcher,
                const std::function<void()>& explicit_run = {}) {
  const bool explicit_allowed = static_cast<bool>(explicit_run);
  const CoopShape coop = explicit_allowed ? coop_eligible(dev, c) : CoopShape{};
  const auto& coops = coop_configs();
  if (const int forced = forced_coop_config(); forced >= 0 && coop.m != 0 &&
                                               coop_config_fits(dev, coops[static_cast<std::size_t>(forced)], coop))
    return ConvPlan{ConvPlan::coop, forced};
  if (const int forced = forced_tile_config(); forced >= 0) return ConvPlan{ConvPlan::tiled, forced};
  if (const char* env = std::getenv("KILN_MATMUL_CONFIG"); env && *env)
    if (auto p = named_plan(dev, env, explicit_allowed, coop)) return *p;
  if (!tiled_autotuning(dev)) return ConvPlan{ConvPlan::tiled, heuristic_tile_config(dev, c.m, c.l, c.k, c.batches())};
  AutotuneCache& cache = tiled_autotune_cache(dev);
  const std::string key = shape_class(c, launcher.variant());
  if (auto hit = cache.lookup(key))
    if (auto p = named_plan(dev, *hit, explicit_allowed, coop)) return *p;
  std::vector<ConvPlan> candidates;
  if (explicit_allowed && explicit_candidate(dev, c.dtype)) candidates.push_back({ConvPlan::explicit_gemm, 0});
  for (std::size_t i = 0; coop.m != 0 && i < coops.size(); ++i)
    if (coop_config_fits(dev, coops[i], coop)) candidates.push_back({ConvPlan::coop, static_cast<int>(i)});
  for (std::size_t i = 0; i < tile_configs().size(); ++i)
    if (tile_config_fits(dev, tile_configs()[i])) candidates.push_back({ConvPlan::tiled, static_cast<int>(i)});
  auto requests = [&] {
    std::vector<KernelRequest> r;
    for (const ConvPlan& p : candidates)
      if (p.kind != ConvPlan::explicit_gemm) r.push_back(launcher.request(p));
    return r;
  };
  // Where every candidate gives the same bits (the tiled configurations: f32), they compile in
  // the background while the class runs on the heuristic's choice (as the matmul's do).
  const bool same_bits = std::all_of(candidates.begin(), candidates.end(),
                                     [](const ConvPlan& p) { return p.kind == ConvPlan::tiled; });
  if (same_bits && background_autotune_enabled() && !dev.background_compiler().ready("conv " + key, requests))
    return ConvPlan{ConvPlan::tiled, heuristic_tile_config(dev, c.m, c.l, c.k, c.batches())};
  compile_in_parallel(dev, requests());
  const std::vector<double> times = time_candidates(dev, candidates.size(), [&](std::size_t i) {
    if (candidates[i].kind == ConvPlan::explicit_gemm)
      explicit_run();
    else
      launcher.run(candidates[i]);
  });
  std::size_t best = 0;
  std::string report;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    report += ' ';
    report += plan_name(candidates[i]);
    report += '=';
    report += std::to_string(times[i] * 1e6);
    report += "us";
    if (times[i] < times[best]) best = i;
  }
  const char* name = plan_name(candidates[best]);
  if (log_enabled(spdlog::level::info)) logger().info("vulkan conv autotune [{}]: {} ({})", key, name, report);
  cache.store(key, name);
  return candidates[best];
}

const Buffer* bias_of(const OpIr& op, std::span<Buffer* const> inputs) {
  return op.inputs.size() > 2 ? inputs[2] : nullptr;
}

void conv_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  if (op.outputs[0].numel() == 0) return;
  const ConvGemm c = checked_conv_gemm(op);
  ConvLauncher launcher(dev, c, args.inputs[0], args.inputs[1], bias_of(op, args.inputs), args.outputs[0]);
  const auto explicit_run = [&] { run_explicit(dev, op, c, args); };
  // Timing runs write the output too; the chosen plan runs last.
  const ConvPlan plan = choose(dev, c, launcher, is_half(c.dtype) ? std::function<void()>(explicit_run) : nullptr);
  if (plan.kind == ConvPlan::explicit_gemm)
    explicit_run();
  else
    launcher.run(plan);
}

}  // namespace

void conv_with_epilogue(VulkanDevice& dev, const OpIr& op, const Buffer* x, const Buffer* weight, const Buffer* bias,
                        const Buffer* y, const MatmulEpilogue& epilogue) {
  if (op.outputs[0].numel() == 0) return;
  const ConvGemm c = checked_conv_gemm(op);
  // The autotuner times the plain convolution (an epilogue may update its input in place, so
  // it runs once): into y when y is kept, else into scratch.
  ConvLauncher plain(dev, c, x, weight, bias, epilogue.store_c ? y : nullptr);
  const ConvPlan plan = choose(dev, c, plain);  // tiled: only the tiled kernel takes an epilogue
  ConvLauncher(dev, c, x, weight, bias, y, &epilogue).run(plan);
}

std::string conv_coop_source(const std::string& prelude, CoopShape shape, const CoopConfig& config) {
  return coop_matmul_source(prelude, shape, config, DType::f16, coop_gather_glsl());
}

std::uint64_t coop_convolutions() { return g_coop_convolutions.load(std::memory_order_relaxed); }

void register_conv_gemm_kernels(KernelTable& t) { t.set(OpKind::conv, conv_kernel); }

}  // namespace kiln::vk
