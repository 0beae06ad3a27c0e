// Vulkan kernels of the sliding-window ops unfold and fold, over 3 spatial dims (missing leading
// dims have size 1), four neighbouring elements of a row per thread. unfold: each thread finds
// its windows and kernel offset by multiply-high divisions and copies the input elements as raw
// words of their size (every dtype shares one kernel per element size), or writes the pad word
// where the window hangs over the border. fold: each thread gathers, for each of its image
// elements, the column elements of every kernel offset whose window covers it, in kernel-offset
// order, into an f32 sum that it rounds once to the dtype: no atomics, and the same order (so,
// for f32, the same bits) as the CPU.
#include "kiln/devices/vulkan/vk_conv.h"

#include <algorithm>
#include <string>

#include "kiln/devices/shape_plans.h"
#include "kiln/devices/vulkan/vk_conv_gemm.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {
namespace {

using Geometry = WindowGeometry;

Geometry geometry(const char* op, const OpIr& o, const Shape& image_shape) {
  const Geometry g = window_geometry(o, image_shape);
  check_window_reach(op, g, o.inputs[0]);
  return g;
}

void check_sizes(const char* op, const OpIr& o) {
  check_32bit_elements(op, o.inputs[0].numel());
  check_32bit_elements(op, o.outputs[0].numel());
}

// Both kernels give each thread four neighbouring elements of one output row: the divisions
// that place them are done once, and the four go out in one vector store where the rows are
// whole vectors (`vec`), else one by one up to the row's end.
bool vector_rows(const Buffer& out, std::int64_t row, std::size_t elem) {
  return row % 4 == 0 && elem <= 4 && VulkanDevice::address(out) % (4 * elem) == 0;
}

// unfold's output rows are r = (nc, k) with kernel offset k = (kd, kh, kw), each holding L
// windows l = (od, oh, ow); a thread takes l0..l0 + 3 of one row.
std::string unfold_source(const VulkanDevice& dev, std::size_t elem, bool vec) {
  const std::string ptr = raw_pointer_type(elem), val = raw_value_type(elem);
  std::string s = dev.prelude() + glsl_fast_div() + glsl_window_args();
  s += "layout(buffer_reference, std430, buffer_reference_align = 16) buffer UnfoldU32x4s { uvec4 v[]; };\n";
  s += "layout(buffer_reference, std430, buffer_reference_align = 8) buffer UnfoldU32x2s { uvec2 v[]; };\n";
  s += "layout(local_size_x = 256) in;\nvoid main() {\n";
  s += "  " + ptr + " src = " + ptr + "(arg_u64(0));\n  " + ptr + " dst = " + ptr + "(arg_u64(1));\n";
  s += "  " + val + " fill = " + (elem == 8 ? "arg_i64(3)" : "arg_u32(3)") + ";\n  " + val + " v[4];\n";
  s += R"(  uint threads = arg_u32(2), plane = arg_u32(4), L = arg_u32(23);
  Div by_quads = div_at(5u), by_k = div_at(7u), by_ow = div_at(9u), by_oh = div_at(11u), by_kw = div_at(13u),
      by_kh = div_at(15u);
  ivec3 pad; uvec3 stride, dil, size;
  window_at(17u, pad, stride, dil, size);
  KILN_FOR_EACH(q, threads) {
    uint r = div_by(q, by_quads), l0 = (q - r * by_quads.d) * 4u;
    uint nc = div_by(r, by_k), k = r - nc * by_k.d;
    uint t = div_by(l0, by_ow), od = div_by(t, by_oh);
    uint oh = t - od * by_oh.d, ow = l0 - t * by_ow.d;
    uint u = div_by(k, by_kw), kd = div_by(u, by_kh);
    ivec3 offset = ivec3(uvec3(kd, u - kd * by_kh.d, k - u * by_kw.d) * dil) - pad;
    uint image = nc * plane, at_row = r * L + l0;
    for (uint j = 0u; j < 4u; ++j) {
      ivec3 at = ivec3(uvec3(od, oh, ow) * stride) + offset;
      bool inside = all(lessThan(uvec3(at), size));
      // Element 0 stands in for the padding: no address outside the input is ever formed.
      uint from = inside ? image + (uint(at.x) * size.y + uint(at.y)) * size.z + uint(at.z) : 0u;
)";
  s += "      " + val + " e = " + raw_load(elem, "src", "from") + ";\n";
  s += R"(      v[j] = inside ? e : fill;
      if (++ow == by_ow.d) { ow = 0u; if (++oh == by_oh.d) { oh = 0u; ++od; } }
    }
)";
  if (vec && elem == 4) {
    s += "    UnfoldU32x4s(arg_u64(1)).v[at_row / 4u] = uvec4(v[0], v[1], v[2], v[3]);\n";
  } else if (vec && elem == 2) {
    s += "    UnfoldU32x2s(arg_u64(1)).v[at_row / 4u] = uvec2(v[0] | (v[1] << 16), v[2] | (v[3] << 16));\n";
  } else if (vec && elem == 1) {
    s += "    U32s(arg_u64(1)).v[at_row / 4u] = v[0] | (v[1] << 8) | (v[2] << 16) | (v[3] << 24);\n";
  } else {
    s += "    for (uint j = 0u; j < 4u && l0 + j < L; ++j) " + raw_store(elem, "dst", "at_row + j", "v[j]") + "\n";
  }
  s += "  }\n}\n";
  return s;
}

void unfold_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const TensorIr &x = op.inputs[0], &y = op.outputs[0];
  if (y.numel() == 0) return;
  check_sizes("unfold", op);
  const Geometry g = geometry("unfold", op, x.shape);
  const std::size_t elem = dtype_size(x.dtype);
  const std::int64_t L = g.windows(), quads = (L + 3) / 4;
  const bool vec = vector_rows(*args.outputs[0], L, elem);
  // Without padding the value is never written, and the shape rule let any value through.
  const bool padded = g.padding[0] > 0 || g.padding[1] > 0 || g.padding[2] > 0;
  const std::int64_t threads = g.batch_channels * g.volume() * quads;
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.outputs[0]).u32(static_cast<std::uint32_t>(threads));          // 0..2
  a.u64(raw_word(padded ? g.pad_value : 0.0, x.dtype)).u32(static_cast<std::uint32_t>(g.plane()));  // 3, 4
  push_div(a, quads);                                                                                   // 5, 6
  push_div(a, g.volume());                                                                              // 7, 8
  push_div(a, g.out[2]);                                                                                // 9, 10
  push_div(a, g.out[1]);                                                                                // 11, 12
  push_div(a, g.kernel[2]);                                                                             // 13, 14
  push_div(a, g.kernel[1]);                                                                             // 15, 16
  push_window(a, g);                                                                                    // 17..22
  a.u32(static_cast<std::uint32_t>(L));                                                                 // 23
  dev.launch(
      "conv/unfold/e" + std::to_string(elem) + (vec ? "/v" : "/s"), "unfold",
      [&] { return unfold_source(dev, elem, vec); }, a, groups_for(static_cast<std::uint64_t>(threads)));
}

// fold's output is rows of W image elements; a thread takes iw0..iw0 + 3 of one row (nc, id, ih)
// and, along each dim, finds the windows o with o * stride + k * dilation - padding equal to
// the coordinate. The depth and height checks are shared by the four; each element's sum runs
// over the kernel offsets in the CPU's order.
std::string fold_source(const VulkanDevice& dev, DType t, bool vec) {
  const std::string ptr = glsl_pointer_type(t);
  std::string s = dev.prelude() + glsl_fast_div() + glsl_window_args() + glsl_vector_types(is_half(t));
  s += "layout(local_size_x = 256) in;\nvoid main() {\n";
  s += "  " + ptr + " cols = " + ptr + "(arg_u64(0));\n  " + ptr + " dst = " + ptr + "(arg_u64(1));\n";
  s += R"(  uint threads = arg_u32(2);
  uint K = uint(arg_u64(3)), L = uint(arg_u64(3) >> 32);
  uvec3 kernel = uvec3(uint(arg_u64(4)), uint(arg_u64(4) >> 32), uint(arg_u64(5)));
  uvec3 windows = uvec3(uint(arg_u64(6)), uint(arg_u64(6) >> 32), uint(arg_u64(7)));
  Div by_quads = div_at(8u), by_h = div_at(10u), by_d = div_at(12u);
  Div by_stride[3] = Div[3](div_at(14u), div_at(16u), div_at(18u));
  ivec3 pad; uvec3 stride, dil, size;
  window_at(20u, pad, stride, dil, size);
  KILN_FOR_EACH(q, threads) {
    uint row = div_by(q, by_quads), iw0 = (q - row * by_quads.d) * 4u;
    uint slice = div_by(row, by_h), ih = row - slice * size.y;  // row = (nc * D + id) * H + ih
    uint nc = div_by(slice, by_d), id = slice - nc * size.x;
    int at_d = int(id) + pad.x, at_h = int(ih) + pad.y, at_w = int(iw0) + pad.z;
    uint base = nc * K * L;
    vec4 acc = vec4(0.0);
    // `at - k * dil` only falls as k grows: once negative, no later offset reaches the element.
    for (uint kd = 0u; kd < kernel.x; ++kd) {
      int rd = at_d - int(kd * dil.x);
      if (rd < 0) break;
      uint od = div_by(uint(rd), by_stride[0]);
      if (od * stride.x != uint(rd) || od >= windows.x) continue;
      for (uint kh = 0u; kh < kernel.y; ++kh) {
        int rh = at_h - int(kh * dil.y);
        if (rh < 0) break;
        uint oh = div_by(uint(rh), by_stride[1]);
        if (oh * stride.y != uint(rh) || oh >= windows.y) continue;
        uint k_row = (kd * kernel.y + kh) * kernel.z, window_row = (od * windows.y + oh) * windows.z;
        for (uint kw = 0u; kw < kernel.z; ++kw) {
          uint at = base + (k_row + kw) * L + window_row;
          for (uint j = 0u; j < 4u; ++j) {
            int rw = at_w + int(j) - int(kw * dil.z);
            uint ow = div_by(uint(max(rw, 0)), by_stride[2]);
            if (rw >= 0 && ow * stride.z == uint(rw) && ow < windows.z && iw0 + j < size.z)
)";
  s += "              acc[j] += " + glsl_load(t, "cols", "at + ow") + ";\n";
  s += "          }\n        }\n      }\n    }\n";
  s += "    uint at_out = row * size.z + iw0;\n";
  if (vec)
    s += "    " + glsl_store4(t, "arg_u64(1)", "at_out / 4u", "acc") + "\n";
  else
    s +=
        "    for (uint j = 0u; j < 4u && iw0 + j < size.z; ++j) " + glsl_store(t, "dst", "at_out + j", "acc[j]") + "\n";
  s += "  }\n}\n";
  return s;
}

void fold_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const TensorIr& y = op.outputs[0];
  if (y.numel() == 0) return;
  check_sizes("fold", op);
  const Geometry g = geometry("fold", op, y.shape);
  const DType t = y.dtype;
  const std::int64_t W = g.image[2], quads = (W + 3) / 4;
  // f32 rows as vec4, 16-bit ones as four packed words (the prelude's vector stores).
  const bool vec = vector_rows(*args.outputs[0], W, dtype_size(t));
  const std::int64_t threads = g.batch_channels * g.image[0] * g.image[1] * quads;
  LaunchArgs a;
  a.buffer(*args.inputs[0]).buffer(*args.outputs[0]).u32(static_cast<std::uint32_t>(threads));  // 0..2
  a.u64(window_pair(g.volume(), g.windows()));                                                  // 3
  a.u64(window_pair(g.kernel[0], g.kernel[1])).u64(window_pair(g.kernel[2], 0));                // 4, 5
  a.u64(window_pair(g.out[0], g.out[1])).u64(window_pair(g.out[2], 0));                         // 6, 7
  push_div(a, quads);                                                                           // 8, 9
  push_div(a, g.image[1]);                                                                      // 10, 11
  push_div(a, g.image[0]);                                                                      // 12, 13
  for (int d = 0; d < 3; ++d) push_div(a, g.stride[d]);                                         // 14..19
  push_window(a, g);                                                                            // 20..25
  dev.launch(
      std::string("conv/fold/") + dtype_name(t) + (vec ? "/v" : "/s"), "fold", [&] { return fold_source(dev, t, vec); },
      a, groups_for(static_cast<std::uint64_t>(threads)));
}

}  // namespace

std::uint64_t window_pair(std::int64_t lo, std::int64_t hi) {
  return static_cast<std::uint32_t>(lo) | static_cast<std::uint64_t>(static_cast<std::uint32_t>(hi)) << 32;
}

LaunchArgs& push_div(LaunchArgs& a, std::int64_t divisor) {
  const FastDiv div(static_cast<std::uint32_t>(divisor));
  return a.u64(window_pair(div.d, div.magic)).u32(div.shifts);
}

void push_window(LaunchArgs& a, const WindowGeometry& g) {
  for (int d = 0; d < 3; ++d) a.u64(window_pair(g.padding[d], g.stride[d])).u64(window_pair(g.dilation[d], g.image[d]));
}

const char* glsl_window_args() {
  return R"(
struct Div { uint d, magic, shifts; };
Div div_at(uint i) { uint64_t w = arg_u64(i); return Div(uint(w), uint(w >> 32), arg_u32(i + 1u)); }
uint div_by(uint n, Div v) { return kiln_div(n, v.magic, v.shifts); }
// Window arguments from word `at`: per dim padding, stride, dilation and image size.
void window_at(uint at, out ivec3 pad, out uvec3 stride, out uvec3 dil, out uvec3 size) {
  for (int d = 0; d < 3; ++d) {
    uint64_t w0 = arg_u64(at + 2u * uint(d)), w1 = arg_u64(at + 2u * uint(d) + 1u);
    pad[d] = int(uint(w0)); stride[d] = uint(w0 >> 32); dil[d] = uint(w1); size[d] = uint(w1 >> 32);
  }
}
)";
}

void check_window_reach(const char* op, const WindowGeometry& g, const TensorIr& operand) {
  for (int e = 0; e < 3; ++e) {
    // The kernels compute coordinates in 32-bit ints: the farthest a window reaches, and the
    // padding subtracted from it, must fit (any window that does not is far larger than memory).
    const std::int64_t reach = (g.out[e] - 1) * g.stride[e] + (g.kernel[e] - 1) * g.dilation[e];
    KILN_CHECK(reach < INT32_MAX && g.padding[e] < INT32_MAX, op,
               "window parameters beyond 2^31 are not supported on Vulkan (" + describe(operand) + ")");
  }
}

void register_conv_kernels(KernelTable& t) {
  t.set(OpKind::unfold, unfold_kernel);
  t.set(OpKind::fold, fold_kernel);
  register_conv_gemm_kernels(t);
  register_conv_grad_kernels(t);
}

}  // namespace kiln::vk
