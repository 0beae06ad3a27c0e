// Vulkan kernels of the pooling ops, one thread per element of the output they write, in f32
// arithmetic for every float dtype (f16 and bf16 load into f32 and round once when stored).
// The forwards walk their window in torch's order, rows then columns, skipping the padding:
// max pooling keeps the first maximum, or the last NaN, and its position; average pooling sums
// and divides by torch's divisor, the CPU's bits in f32. The gradients give each thread an
// input element and gather from the windows that cover it (kernel offsets from the last to the
// first: the windows in output order, the order the CPU and torch's CPU kernels add them in):
// max pooling's dy where the window's index names the element, average pooling's dy over the
// window's divisor. No atomics, and the same bits on every run and on the CPU.
#include <string>

#include "kiln/devices/pool_geometry.h"
#include "kiln/devices/vulkan/vk_conv.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"

namespace kiln::vk {
namespace pool {

// The argument block every pooling kernel reads (word: what):
//   0 src (x or dy), 1 dst (y or dx), 2 indices (written by max_pool, read by max_pool_grad)
//   3 threads, 4-5 the threads' row length as a divisor, 6-7 their rows per plane as one
//   8 (H, W), 9 (OH, OW), 10 (KH, KW), 11 (SH, SW), 12 (PH, PW), 13 (DH, DW)
//   14-15 SH, 16-17 SW as divisors (the gradients)
// A forward's threads run over its outputs, a gradient's over its input elements.
LaunchArgs pool_args(const PoolGeometry& g, const KernelArgs& args, const Buffer* indices, bool grad) {
  const std::int64_t rows = grad ? g.in[0] : g.out[0], row = grad ? g.in[1] : g.out[1];
  const std::int64_t threads = g.planes * rows * row;
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.outputs[0]);
  if (indices)
    a.buffer(*indices);
  else
    a.u64(0);
  a.u32(static_cast<std::uint32_t>(threads));
  push_div(a, row);
  push_div(a, rows);
  a.u64(window_pair(g.in[0], g.in[1])).u64(window_pair(g.out[0], g.out[1]));
  a.u64(window_pair(g.kernel[0], g.kernel[1])).u64(window_pair(g.stride[0], g.stride[1]));
  a.u64(window_pair(g.padding[0], g.padding[1])).u64(window_pair(g.dilation[0], g.dilation[1]));
  push_div(a, g.stride[0]);
  push_div(a, g.stride[1]);
  return a;
}

// The GLSL every pooling kernel opens with: pointers, the geometry, and the thread's element
// (p, r, c) of a [planes, rows, row] grid.
std::string head(const VulkanDevice& dev, DType t) {
  const std::string ptr = glsl_pointer_type(t);
  std::string s = dev.prelude() + glsl_fast_div() + glsl_window_args();
  s += "layout(local_size_x = 256) in;\n";
  s += "ivec2 pair_at(uint i) { uint64_t w = arg_u64(i); return ivec2(int(uint(w)), int(uint(w >> 32))); }\n";
  s += "void main() {\n  " + ptr + " src = " + ptr + "(arg_u64(0));\n  " + ptr + " dst = " + ptr + "(arg_u64(1));\n";
  s += R"(  I64s indices = I64s(arg_u64(2));
  uint threads = arg_u32(3);
  Div by_row = div_at(4u), by_rows = div_at(6u);
  ivec2 size = pair_at(8u), windows = pair_at(9u), kernel = pair_at(10u), stride = pair_at(11u), pad = pair_at(12u),
        dil = pair_at(13u);
  KILN_FOR_EACH(e, threads) {
    uint pr = div_by(e, by_row), p = div_by(pr, by_rows);
    int r = int(pr - p * by_rows.d), c = int(e - pr * by_row.d);
)";
  return s;
}

const char* kTail = "  }\n}\n";

// ---- forwards: e is output (p, oh = r, ow = c) ----

std::string max_pool_source(const VulkanDevice& dev, DType t, bool with_indices) {
  std::string s = head(dev, t);
  s += R"(    ivec2 start = ivec2(r, c) * stride - pad;
    // Before any element wins, the index names the window's first element inside the input.
    ivec2 first = start + (max(-start, ivec2(0)) + dil - 1) / dil * dil;
    uint base = p * uint(size.x * size.y);
    float best = uintBitsToFloat(0xff800000u);
    int at = first.x * size.y + first.y;
    for (int kh = 0; kh < kernel.x; ++kh) {
      int ih = start.x + kh * dil.x;
      if (ih < 0 || ih >= size.x) continue;
      for (int kw = 0; kw < kernel.y; ++kw) {
        int iw = start.y + kw * dil.y;
        if (iw < 0 || iw >= size.y) continue;
)";
  s += "        float v = " + glsl_load(t, "src", "base + uint(ih * size.y + iw)") + ";\n";
  s += R"(        if (v > best || kiln_isnan(v)) { best = v; at = ih * size.y + iw; }
      }
    }
)";
  s += "    " + glsl_store(t, "dst", "e", "best") + "\n";
  if (with_indices) s += "    indices.v[e] = int64_t(at);\n";
  return s + kTail;
}

// torch's avg_pool2d along one dim: the window clipped to the padded input (its size: the
// count_include_pad factor) and to the input ([lo, hi)).
const char* kAvgSpan = R"(
void avg_span(int o, int stride, int pad, int kernel, int size, out int lo, out int hi, out int padded) {
  int s = o * stride - pad, e = min(s + kernel, size + pad);
  padded = e - s; lo = max(s, 0); hi = min(e, size);
}
int avg_divisor(int hlo, int hhi, int hpad, int wlo, int whi, int wpad, bool include_pad) {
  if (hlo >= hhi || wlo >= whi) return 0;
  return include_pad ? hpad * wpad : (hhi - hlo) * (whi - wlo);
}
)";

// `head` with avg_span ahead of main.
std::string avg_head(const VulkanDevice& dev, DType t) {
  std::string s = head(dev, t);
  const std::size_t at = s.find("void main()");
  return s.insert(at, kAvgSpan);
}

std::string avg_pool_source(const VulkanDevice& dev, DType t, bool include_pad) {
  std::string s = avg_head(dev, t);
  s += std::string("    bool include_pad = ") + (include_pad ? "true" : "false") + ";\n";
  s += R"(    int hlo, hhi, hpad, wlo, whi, wpad;
    avg_span(r, stride.x, pad.x, kernel.x, size.x, hlo, hhi, hpad);
    avg_span(c, stride.y, pad.y, kernel.y, size.y, wlo, whi, wpad);
    uint base = p * uint(size.x * size.y);
    float sum = 0.0;
    for (int ih = hlo; ih < hhi; ++ih)
      for (int iw = wlo; iw < whi; ++iw)
)";
  s += "        sum += " + glsl_load(t, "src", "base + uint(ih * size.y + iw)") + ";\n";
  s += R"(    int divisor = avg_divisor(hlo, hhi, hpad, wlo, whi, wpad, include_pad);
    float y = divisor == 0 ? 0.0 : sum / float(divisor);
)";
  s += "    " + glsl_store(t, "dst", "e", "y") + "\n";
  return s + kTail;
}

// ---- gradients: e is input element (p, ih = r, iw = c); each covering window o, in output
// order, is (oh, ow) with oh * stride + kh * dil - pad = ih for kernel offsets from the last ----

// Opens the two loops over covering windows; `body` sees oh, ow and o (dy's element).
std::string covering_windows(const std::string& body) {
  std::string s = R"(    Div by_sh = div_at(14u), by_sw = div_at(16u);
    uint out_base = p * uint(windows.x * windows.y);
    float acc = 0.0;
    for (int kh = kernel.x - 1; kh >= 0; --kh) {
      int th = r + pad.x - kh * dil.x;
      if (th < 0) continue;
      int oh = int(div_by(uint(th), by_sh));
      if (oh * stride.x != th || oh >= windows.x) continue;
      for (int kw = kernel.y - 1; kw >= 0; --kw) {
        int tw = c + pad.y - kw * dil.y;
        if (tw < 0) continue;
        int ow = int(div_by(uint(tw), by_sw));
        if (ow * stride.y != tw || ow >= windows.y) continue;
        uint o = out_base + uint(oh * windows.y + ow);
)";
  s += body;
  s += "      }\n    }\n";
  return s;
}

std::string max_pool_grad_source(const VulkanDevice& dev, DType t) {
  std::string s = head(dev, t);
  s += "    int64_t own = int64_t(r * size.y + c);\n";
  s += covering_windows("        if (indices.v[o] == own) acc += " + glsl_load(t, "src", "o") + ";\n");
  s += "    " + glsl_store(t, "dst", "e", "acc") + "\n";
  return s + kTail;
}

std::string avg_pool_grad_source(const VulkanDevice& dev, DType t, bool include_pad) {
  std::string s = avg_head(dev, t);
  s += std::string("    bool include_pad = ") + (include_pad ? "true" : "false") + ";\n";
  s += covering_windows(R"(        int hlo, hhi, hpad, wlo, whi, wpad;
        avg_span(oh, stride.x, pad.x, kernel.x, size.x, hlo, hhi, hpad);
        avg_span(ow, stride.y, pad.y, kernel.y, size.y, wlo, whi, wpad);
        int divisor = avg_divisor(hlo, hhi, hpad, wlo, whi, wpad, include_pad);
)" + std::string("        if (divisor != 0) acc += ") +
                        glsl_load(t, "src", "o") + " / float(divisor);\n");
  s += "    " + glsl_store(t, "dst", "e", "acc") + "\n";
  return s + kTail;
}

// ---- kernels ----

// Checks what the kernels' 32-bit arithmetic needs and returns the geometry.
PoolGeometry checked_geometry(const char* op, const OpIr& o) {
  for (const TensorIr& t : o.inputs) check_32bit_elements(op, t.numel());
  for (const TensorIr& t : o.outputs) check_32bit_elements(op, t.numel());
  const PoolGeometry g = pool_geometry(o);
  for (int d = 0; d < 2; ++d) {
    const std::int64_t reach = g.out[d] * g.stride[d] + g.kernel[d] * g.dilation[d] + g.in[d];
    KILN_CHECK(reach < INT32_MAX, op,
               "windows beyond 2^31 are not supported on Vulkan (" + describe(o.inputs[0]) + ")");
  }
  return g;
}

std::string key(const char* kind, DType t, const std::string& variant = "") {
  return std::string("pool/") + kind + "/" + dtype_name(t) + variant;
}

void max_pool_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = checked_geometry("max_pool", op);
  const DType t = op.inputs[0].dtype;
  const bool with_indices = op.outputs.size() > 1;
  const LaunchArgs a = pool_args(g, args, with_indices ? args.outputs[1] : nullptr, false);
  dev.launch(
      key("max", t, with_indices ? "/i" : ""), "max_pool", [&] { return max_pool_source(dev, t, with_indices); }, a,
      groups_for(static_cast<std::uint64_t>(op.outputs[0].numel())));
}

void avg_pool_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = checked_geometry("avg_pool", op);
  const DType t = op.inputs[0].dtype;
  dev.launch(
      key("avg", t, g.count_include_pad ? "/pad" : ""), "avg_pool",
      [&] { return avg_pool_source(dev, t, g.count_include_pad); }, pool_args(g, args, nullptr, false),
      groups_for(static_cast<std::uint64_t>(op.outputs[0].numel())));
}

void max_pool_grad_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = checked_geometry("max_pool_grad", op);
  const DType t = op.inputs[0].dtype;
  dev.launch(
      key("max_grad", t), "max_pool_grad", [&] { return max_pool_grad_source(dev, t); },
      pool_args(g, args, args.inputs[1], true), groups_for(static_cast<std::uint64_t>(op.outputs[0].numel())));
}

void avg_pool_grad_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  if (op.outputs[0].numel() == 0) return;
  const PoolGeometry g = checked_geometry("avg_pool_grad", op);
  const DType t = op.inputs[0].dtype;
  dev.launch(
      key("avg_grad", t, g.count_include_pad ? "/pad" : ""), "avg_pool_grad",
      [&] { return avg_pool_grad_source(dev, t, g.count_include_pad); }, pool_args(g, args, nullptr, true),
      groups_for(static_cast<std::uint64_t>(op.outputs[0].numel())));
}

}  // namespace pool

void register_pool_kernels(KernelTable& t) {
#define KILN_POOL_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::vk
