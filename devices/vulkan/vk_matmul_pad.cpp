// The copies that let the workgroup-scope tensor-core matmul take any f16 / bf16 product
// (vk_matmul.cpp's padded plans): each matrix of an operand into one of whole tiles, zeros around
// it, and C's matrices back out where its rows are whole vectors. Eight 16-bit words per thread,
// stored as one 16-byte vector; read as one too where the source rows are 16-byte aligned, else
// word by word. The generic strided copy (vk_layout_copy.h) moves one word
// per thread and took about 0.1 ms of a padded 4000^3 product on the H200.
#include <string>

#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/base/error.h"

namespace kiln::vk {

void pad_matrix16(VulkanDevice& dev, const Buffer& src, std::uint32_t rows, std::uint32_t cols, std::uint32_t src_stride,
                  const Buffer& dst, std::uint32_t dst_rows, std::uint32_t dst_cols, std::uint32_t matrices,
                  std::uint32_t src_matrix_stride) {
  const std::uint64_t matrix_words = static_cast<std::uint64_t>(rows) * src_stride;
  const std::uint64_t stride = src_matrix_stride ? src_matrix_stride : matrix_words;
  const std::uint64_t vectors = static_cast<std::uint64_t>(matrices) * dst_rows * (dst_cols / 8);
  constexpr std::uint64_t kMax32 = 0xffffffffull;
  KILN_CHECK(dst_cols % 8 == 0 && rows <= dst_rows && cols <= dst_cols && cols <= src_stride &&
                 (matrices <= 1 || stride >= matrix_words) && vectors * 8 <= kMax32 &&
                 (matrices == 0 || (matrices - 1) * stride + matrix_words <= kMax32),
             "matmul",
             "internal error: a padded copy of " + std::to_string(matrices) + " x " + std::to_string(rows) + " x " +
                 std::to_string(cols) + " into " + std::to_string(dst_rows) + " x " + std::to_string(dst_cols));
  if (vectors == 0) return;
  LaunchArgs a;
  a.buffer(src).buffer(dst).u32(rows).u32(cols).u32(src_stride).u32(static_cast<std::uint32_t>(vectors)).u32(dst_cols / 8);
  a.u32(dst_rows).u32(static_cast<std::uint32_t>(stride));
  dev.launch("matmul/pad16", "matmul_pad", [&dev] {
    return dev.prelude() + R"(
layout(buffer_reference, std430, buffer_reference_align = 16) buffer PadU32x4s { uvec4 v[]; };
layout(local_size_x = 256) in;
void main() {
  U16s src = U16s(arg_u64(0));
  PadU32x4s src4 = PadU32x4s(arg_u64(0)), dst = PadU32x4s(arg_u64(1));
  const uint rows = arg_u32(2), cols = arg_u32(3), stride = arg_u32(4), n = arg_u32(5), per_row = arg_u32(6);
  const uint dst_rows = arg_u32(7), matrix_stride = arg_u32(8);
  const bool aligned = (stride & 7u) == 0u && (matrix_stride & 7u) == 0u;
  KILN_FOR_EACH(i, n) {
    const uint dst_row = i / per_row, c0 = (i - dst_row * per_row) * 8u;
    const uint matrix = dst_row / dst_rows, r = dst_row - matrix * dst_rows;
    uvec4 v = uvec4(0u);
    if (r < rows) {
      const uint first = matrix * matrix_stride + r * stride + c0;
      if (aligned && c0 + 8u <= cols) {
        v = src4.v[first >> 3];
      } else {
        uint w[8];  // if-statements: a select could load out of bounds
        for (uint j = 0u; j < 8u; ++j) {
          w[j] = 0u;
          if (c0 + j < cols) w[j] = uint(src.v[first + j]);
        }
        v = uvec4(w[0] | (w[1] << 16), w[2] | (w[3] << 16), w[4] | (w[5] << 16), w[6] | (w[7] << 16));
      }
    }
    dst.v[i] = v;
  }
})";
  }, a, groups_for(vectors));
}

}  // namespace kiln::vk
