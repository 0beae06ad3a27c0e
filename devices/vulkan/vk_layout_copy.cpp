// The strided copy behind every Vulkan layout kernel. The box is first coalesced (size-1 dims
// dropped, neighbours that step together in src and dst merged), so a contiguous copy of any
// rank is a rank-1 kernel and a permute only decomposes the dims it really reorders. Each
// thread turns its flat index into coordinates with multiply-high divisions by the sizes (no
// hardware division per element) and all offsets are 32-bit: strides wrap as unsigned
// integers, which is exact as long as every real offset fits, which the host checks.
#include "kiln/devices/vulkan/vk_layout_copy.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "kiln/ops/half.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

void StridedCopy::push_dim(std::int64_t n, std::int64_t src_step, std::int64_t dst_step) {
  push_bounded_dim(n, src_step, dst_step, 0, n);
}

void StridedCopy::push_bounded_dim(std::int64_t n, std::int64_t src_step, std::int64_t dst_step, std::int64_t lo_c,
                                   std::int64_t hi_c) {
  KILN_CHECK(rank < kMaxCopyRank, "layout", "internal error: copy rank above " + std::to_string(kMaxCopyRank));
  size[rank] = n;
  src_stride[rank] = src_step;
  dst_stride[rank] = dst_step;
  lo[rank] = std::clamp<std::int64_t>(lo_c, 0, n);
  hi[rank] = std::clamp<std::int64_t>(hi_c, lo[rank], n);
  ++rank;
}

void set_contiguous_dst(StridedCopy& copy) {
  std::int64_t acc = 1;
  for (int d = copy.rank - 1; d >= 0; --d) {
    copy.dst_stride[d] = acc;
    acc *= copy.size[d];
  }
}

FastDiv::FastDiv(std::uint32_t divisor) : d(std::max<std::uint32_t>(divisor, 1)) {
  const int l = d == 1 ? 0 : 32 - std::countl_zero(d - 1);  // ceil(log2 d)
  const std::uint64_t two_l = std::uint64_t{1} << l;
  magic = static_cast<std::uint32_t>(((two_l - d) << 32) / d + 1);
  shifts = static_cast<std::uint32_t>(std::min(l, 1)) | static_cast<std::uint32_t>(std::max(l - 1, 0)) << 8;
}

const char* glsl_fast_div() {
  return R"(
uint kiln_div(uint n, uint magic, uint shifts) {
  uint hi, lo;
  umulExtended(n, magic, hi, lo);
  return (hi + ((n - hi) >> (shifts & 0xffu))) >> (shifts >> 8);
}
)";
}

const char* raw_pointer_type(std::size_t bytes) {
  switch (bytes) {
    case 1: return "U8s";
    case 2: return "U16s";  // f16 and bf16 (devices with 16-bit storage only)
    case 4: return "U32s";
    case 8: return "I64s";
    default: throw Error("vulkan", "no raw element type of " + std::to_string(bytes) + " bytes");
  }
}

const char* raw_value_type(std::size_t bytes) {
  switch (bytes) {
    case 1:
    case 2:
    case 4: return "uint";
    case 8: return "int64_t";
    default: throw Error("vulkan", "no raw element type of " + std::to_string(bytes) + " bytes");
  }
}

std::string raw_load(std::size_t bytes, const std::string& ptr, const std::string& index) {
  const std::string e = ptr + ".v[" + index + "]";
  return bytes <= 2 ? "uint(" + e + ")" : e;
}

std::string raw_store(std::size_t bytes, const std::string& ptr, const std::string& index, const std::string& value) {
  const std::string e = ptr + ".v[" + index + "] = ";
  if (bytes == 1) return e + "uint8_t(" + value + ");";
  return bytes == 2 ? e + "uint16_t(" + value + ");" : e + value + ";";
}

std::uint64_t raw_word(double value, DType t) {
  std::uint64_t bits = 0;
  switch (t) {
    case DType::f32: {
      const float f = static_cast<float>(value);
      std::memcpy(&bits, &f, sizeof f);
      return bits;
    }
    case DType::i64: {
      const auto i = static_cast<std::int64_t>(value);  // the shape rule checked the range
      std::memcpy(&bits, &i, sizeof i);
      return bits;
    }
    case DType::f16: return f16_bits(static_cast<float>(value));
    case DType::bf16: return bf16_bits(static_cast<float>(value));
    default: return value != 0.0 ? 1 : 0;
  }
}

void check_32bit_elements(const char* op, std::int64_t elements) {
  KILN_CHECK(elements < static_cast<std::int64_t>(UINT32_MAX), op,
             "tensors of 2^32 elements or more are not supported on Vulkan yet (" + std::to_string(elements) + ")");
}

namespace {

bool full(const StridedCopy& c, int d) { return c.lo[d] == 0 && c.hi[d] == c.size[d]; }

StridedCopy coalesce(const StridedCopy& c) {
  StridedCopy o = c;
  o.rank = 0;
  for (int d = 0; d < c.rank; ++d) {
    if (c.size[d] == 1 && full(c, d)) continue;
    if (o.rank > 0 && full(c, d)) {
      const int p = o.rank - 1;
      if (full(o, p) && o.src_stride[p] == c.src_stride[d] * c.size[d] &&
          o.dst_stride[p] == c.dst_stride[d] * c.size[d]) {
        o.size[p] *= c.size[d];
        o.hi[p] = o.size[p];
        o.src_stride[p] = c.src_stride[d];
        o.dst_stride[p] = c.dst_stride[d];
        continue;
      }
    }
    const int q = o.rank++;
    o.size[q] = c.size[d];
    o.src_stride[q] = c.src_stride[d];
    o.dst_stride[q] = c.dst_stride[d];
    o.lo[q] = c.lo[d];
    o.hi[q] = c.hi[d];
  }
  if (o.rank == 0) {
    o.rank = 1;
    o.size[0] = 1;
    o.src_stride[0] = o.dst_stride[0] = 1;
    o.lo[0] = 0;
    o.hi[0] = 1;
  }
  return o;
}

std::uint64_t wrap32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

std::string copy_source(const VulkanDevice& dev, int rank, std::size_t elem, bool dst_contiguous, bool bounded) {
  const std::string r = std::to_string(rank), ptr = raw_pointer_type(elem), val = raw_value_type(elem);
  std::string s = dev.prelude();
  s += glsl_fast_div();
  s += "#define R " + r + "\n";
  s += R"(
layout(local_size_x = 256) in;
void main() {
)";
  s += "  " + ptr + " src = " + ptr + "(arg_u64(0));\n  " + ptr + " dst = " + ptr + "(arg_u64(1));\n";
  s += "  " + val + " fill = " + (elem == 8 ? "arg_i64(5)" : "arg_u32(5)") + ";\n";
  s += R"(  uint n = arg_u32(2), src_base = arg_u32(3), dst_base = arg_u32(4);
  uint sz[R], mg[R], sh[R], ss[R], ds[R], lo[R], span[R];
  for (int k = 0; k < R; ++k) {
    uint b = 6u + 6u * uint(k);
    sz[k] = arg_u32(b); mg[k] = arg_u32(b + 1u); sh[k] = arg_u32(b + 2u);
    ss[k] = arg_u32(b + 3u); ds[k] = arg_u32(b + 4u);
    uint64_t bounds = arg_u64(b + 5u);
    lo[k] = uint(bounds); span[k] = uint(bounds >> 32);
  }
  KILN_FOR_EACH(i, n) {
    uint rest = i, so = src_base, d_off = dst_base;
    bool inside = true;
    for (int k = R - 1; k > 0; --k) {
      uint q = kiln_div(rest, mg[k], sh[k]);
      uint c = rest - q * sz[k];
      so += c * ss[k];
      d_off += c * ds[k];
)";
  if (bounded) s += "      inside = inside && (c - lo[k]) < span[k];\n";
  s += R"(      rest = q;
    }
    so += rest * ss[0];
    d_off += rest * ds[0];
)";
  if (bounded) s += "    inside = inside && (rest - lo[0]) < span[0];\n";
  const std::string at = dst_contiguous ? "dst_base + i" : "d_off";
  if (bounded)
    s += "    " + raw_store(elem, "dst", at, "inside ? " + raw_load(elem, "src", "so") + " : fill") + "\n";
  else
    s += "    " + raw_store(elem, "dst", at, raw_load(elem, "src", "so")) + "\n";
  s += "  }\n}\n";
  return s;
}

}  // namespace

void run_strided_copy(VulkanDevice& dev, const char* op, StridedCopy copy) {
  std::int64_t numel = 1;
  for (int d = 0; d < copy.rank; ++d) numel *= copy.size[d];
  if (numel == 0) return;
  check_32bit_elements(op, numel);
  check_32bit_elements(op, static_cast<std::int64_t>(copy.src->bytes() / copy.elem_bytes));
  check_32bit_elements(op, static_cast<std::int64_t>(copy.dst->bytes() / copy.elem_bytes));
  const StridedCopy c = coalesce(copy);
  bool bounded = false, dst_contiguous = true;
  std::int64_t acc = 1;
  for (int d = c.rank - 1; d >= 0; --d) {
    bounded = bounded || !full(c, d);
    dst_contiguous = dst_contiguous && (c.size[d] == 1 || c.dst_stride[d] == acc);
    acc *= c.size[d];
  }
  LaunchArgs a;
  a.buffer(*c.src).buffer(*c.dst).u32(static_cast<std::uint32_t>(numel));
  a.u64(wrap32(c.src_offset)).u64(wrap32(c.dst_offset)).u64(c.fill);
  for (int d = 0; d < c.rank; ++d) {
    const FastDiv div(static_cast<std::uint32_t>(c.size[d]));
    a.u32(div.d).u32(div.magic).u32(div.shifts).u64(wrap32(c.src_stride[d])).u64(wrap32(c.dst_stride[d]));
    a.u64(static_cast<std::uint64_t>(c.lo[d]) | static_cast<std::uint64_t>(c.hi[d] - c.lo[d]) << 32);
  }
  const std::string key = "layout/copy/e" + std::to_string(c.elem_bytes) + "/r" + std::to_string(c.rank) +
                          (dst_contiguous ? "/c" : "/s") + (bounded ? "/b" : "/f");
  dev.launch(
      key, "strided_copy", [&] { return copy_source(dev, c.rank, c.elem_bytes, dst_contiguous, bounded); }, a,
      groups_for(static_cast<std::uint64_t>(numel)));
}

}  // namespace kiln::vk
