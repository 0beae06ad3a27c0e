// Vulkan kernel of cumsum along one dim of [outer, extent, inner]. f32 scans in f32 with a
// compensated (Kahan) carry, close to the CPU's f64 running sum; i64 and bool give i64 (exact).
//   cols   inner > 1, or short rows: a thread per column scans serially; neighbouring threads
//          read neighbouring addresses along inner.
//   rows   a workgroup per row walks it in tiles of 256 x 4 elements: each thread scans its 4,
//          a shared-memory scan over the threads gives their offsets, the tile's total moves
//          the carry on.
//   split  a long row with little else to do: chunk totals (a workgroup per chunk), their
//          exclusive prefix per row (a thread per row), then every chunk scans from its prefix.
// The output may be the input's buffer: a thread writes only the elements it read, after the
// tile's barrier, and the passes before the last only read.
#include <algorithm>

#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::reduce {

namespace {

constexpr std::uint32_t kScanGroup = 256, kPerThread = 4;
constexpr std::uint32_t kScanRowsMinExtent = 64;
constexpr std::uint32_t kSplitChunk = 8192;  // least elements per chunk of a split row
constexpr std::uint64_t kScanTargetGroups = 1024;
constexpr std::uint32_t kScanMaxSplits = 1024;

constexpr const char* kScan = R"(
XP xs;
YP ys;
PP part;  // chunk totals, in the accumulator's type (f32 for 16-bit floats)
// The carry of a running sum; f32 keeps the rounding error it lost in `lost` (Kahan).
void carry_add(inout YT carry, inout YT lost, YT v) {
#ifdef FLOAT_SCAN
  precise YT y = v - lost;
  precise YT t = carry + y;
  lost = (t - carry) - y;
  carry = t;
#else
  carry += v;
#endif
}

#if defined(MODE_ROWS) || defined(MODE_TOTALS)
shared YT sc[WG];
// The sum of v over the threads before this one; `total` gets the sum over all.
YT wg_exclusive(YT v, out YT total) {
  uint lid = gl_LocalInvocationID.x;
  sc[lid] = v;
  barrier();
  for (uint off = 1u; off < WG; off <<= 1) {
    YT t = lid >= off ? sc[lid - off] : YT(0);
    barrier();
    sc[lid] += t;
    barrier();
  }
  YT excl = lid > 0u ? sc[lid - 1u] : YT(0);
  total = sc[WG - 1u];
  barrier();
  return excl;
}
#endif

layout(local_size_x = WG) in;
void main() {
  xs = XP(arg_u64(0));
  ys = YP(arg_u64(1));
  part = PP(arg_u64(2));
  uint outer = arg_u32(3), extent = arg_u32(4), inner = arg_u32(5), chunk = arg_u32(6), splits = arg_u32(7);
#if defined(MODE_COLS)
  KILN_FOR_EACH(k, outer * inner) {
    uint o = k / inner, i = k - o * inner, base = o * extent * inner + i;
    YT carry = YT(0), lost = YT(0);
    for (uint r = 0u; r < extent; ++r) {
      uint idx = base + r * inner;
      carry_add(carry, lost, VAL(load_x(idx)));
      store_y(idx, carry - lost);
    }
  }
#elif defined(MODE_PREFIX)
  KILN_FOR_EACH(o, outer) {
    YT carry = YT(0), lost = YT(0);
    for (uint s = 0u; s < splits; ++s) {
      YT v = part.v[o * splits + s];
      part.v[o * splits + s] = carry - lost;
      carry_add(carry, lost, v);
    }
  }
#else
  uint lid = gl_LocalInvocationID.x;
  for (uint g = gl_WorkGroupID.x; g < outer * splits; g += gl_NumWorkGroups.x) {
    uint o = g / splits, s = g - o * splits;
    uint r0 = s * chunk, r1 = min(extent, r0 + chunk), base = o * extent;
#if defined(MODE_TOTALS)
    YT sum = YT(0), total;
    for (uint r = r0 + lid; r < r1; r += WG) sum += VAL(load_x(base + r));
    wg_exclusive(sum, total);
    if (lid == 0u) part.v[g] = total;
#else
    YT carry = splits > 1u ? part.v[g] : YT(0), lost = YT(0);
    for (uint t0 = r0; t0 < r1; t0 += WG * PER_THREAD) {
      uint e0 = t0 + lid * PER_THREAD;
      YT run[PER_THREAD];
      YT acc = YT(0);
      for (uint j = 0u; j < PER_THREAD; ++j) {
        if (e0 + j < r1) acc += VAL(load_x(base + e0 + j));
        run[j] = acc;
      }
      YT total;
      YT offset = (carry - lost) + wg_exclusive(acc, total);
      for (uint j = 0u; j < PER_THREAD; ++j)
        if (e0 + j < r1) store_y(base + e0 + j, offset + run[j]);
      carry_add(carry, lost, total);
    }
#endif
  }
#endif
}
)";

enum class ScanMode { cols, rows, totals, prefix };

// The running sums' type: f32 for every float output (16-bit ones are rounded only as they are
// stored), i64 for the others.
DType accumulator(DType out) { return is_floating(out) ? DType::f32 : DType::i64; }

void launch(VulkanDevice& dev, DType in, DType out, ScanMode mode, const LaunchArgs& a, Groups groups) {
  static const char* names[] = {"COLS", "ROWS", "TOTALS", "PREFIX"};
  const char* m = names[static_cast<int>(mode)];
  const std::string key = std::string("reduce/cumsum/") + dtype_name(in) + "/" + m;
  dev.launch(
      key, "cumsum",
      [&] {
        std::string s = dev.prelude();
        s += "#define WG " + std::to_string(kScanGroup) + "u\n#define PER_THREAD " + std::to_string(kPerThread) + "u\n";
        s += std::string("#define XT ") + glsl_value_type(in) + "\n#define YT " + glsl_value_type(out) + "\n";
        s += std::string("#define XP ") + glsl_pointer_type(in) + "\n#define YP " + glsl_pointer_type(out) + "\n";
        s += std::string("#define PP ") + glsl_pointer_type(accumulator(out)) + "\n";
        s += std::string("#define MODE_") + m + " 1\n";
        if (is_floating(out)) s += "#define FLOAT_SCAN 1\n";
        s += "#define VAL(x) " + std::string(in == DType::bool_ ? "((x) ? 1l : 0l)" : "(x)") + "\n";
        // Macro parameters named so that they cannot capture the pointers' field `v`.
        s += "#define load_x(I_) " + glsl_load(in, "xs", "(I_)") + "\n";
        s += "#define store_y(I_, V_) " + glsl_store(out, "ys", "(I_)", "(V_)") + "\n";
        s += kScan;
        return s;
      },
      a, groups);
}

std::uint32_t scan_ceil_div(std::uint64_t a, std::uint64_t b) { return static_cast<std::uint32_t>((a + b - 1) / b); }

void cumsum_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const DType in = op.inputs[0].dtype;
  KILN_CHECK(is_floating(in) || in == DType::i64 || in == DType::bool_, op_name(op.kind),
             "input " + describe(op.inputs[0]) + ": dtype not supported");
  const DType out = op.outputs[0].dtype;
  const Geometry g = geometry_along_dim(op, static_cast<int>(op.attrs.dim));
  if (g.elements() == 0) return;
  const bool rows = g.inner == 1 && g.extent >= kScanRowsMinExtent;
  std::uint32_t splits = 1;
  if (rows && g.outer < kScanTargetGroups)
    splits = std::min<std::uint64_t>(
        {scan_ceil_div(g.extent, kSplitChunk), scan_ceil_div(kScanTargetGroups, g.outer), kScanMaxSplits});
  splits = std::max<std::uint32_t>(splits, 1);
  const std::uint32_t chunk = scan_ceil_div(g.extent, splits);
  splits = scan_ceil_div(g.extent, chunk);
  BufferPtr totals;
  if (splits > 1) totals = dev.memory().allocate(std::size_t{g.outer} * splits * dtype_size(accumulator(out)));
  LaunchArgs a;
  a.u64(address_or_null(*args.inputs[0]))
      .u64(address_or_null(*args.outputs[0]))
      .u64(totals ? VulkanDevice::address(*totals) : 0);
  a.u32(g.outer).u32(g.extent).u32(g.inner).u32(chunk).u32(splits);
  if (!rows) return launch(dev, in, out, ScanMode::cols, a, groups_for(g.outputs(), kScanGroup));
  const Groups groups{static_cast<std::uint32_t>(std::min<std::uint64_t>(std::uint64_t{g.outer} * splits, 65535)), 1,
                      1};
  if (splits > 1) {
    launch(dev, in, out, ScanMode::totals, a, groups);
    launch(dev, in, out, ScanMode::prefix, a, groups_for(g.outer, kScanGroup));
  }
  launch(dev, in, out, ScanMode::rows, a, groups);
}

}  // namespace

void register_scan_kernels(KernelTable& t) { t.set(OpKind::cumsum, cumsum_kernel); }

}  // namespace kiln::vk::reduce
