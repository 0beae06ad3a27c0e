// devices/vulkan private: the one strided gather every Vulkan layout kernel reduces to, and the
// division by invariant integers that the layout and index kernels use to turn a flat element
// index into coordinates. The copy walks an N-d box row-major: element (c_0, ..., c_{r-1}) moves
// src[src_offset + sum c_d * src_stride_d] to dst[dst_offset + sum c_d * dst_stride_d]. Source
// strides may be 0 (expand, repeat) or negative (flip); a dim may also carry bounds [lo, hi)
// outside of which the element is the fill word instead (pad). Elements move as raw 1-, 4- or
// 8-byte words (2-byte ones for f16 and bf16), so every dtype shares one kernel per (element
// size, rank).
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "kiln/devices/shape_plans.h"
#include "kiln/devices/vulkan/vk_device.h"

namespace kiln::vk {

struct StridedCopy {
  int rank = 0;
  std::array<std::int64_t, kMaxCopyRank> size{};
  std::array<std::int64_t, kMaxCopyRank> src_stride{};  // in elements
  std::array<std::int64_t, kMaxCopyRank> dst_stride{};  // in elements
  std::array<std::int64_t, kMaxCopyRank> lo{};          // the source is read for lo <= c < hi
  std::array<std::int64_t, kMaxCopyRank> hi{};
  const Buffer* src = nullptr;
  const Buffer* dst = nullptr;
  std::int64_t src_offset = 0;  // element of src at coordinates (0, ..., 0); may be negative
  std::int64_t dst_offset = 0;  // (pad: the source starts at the bounds' corner)
  std::size_t elem_bytes = 4;
  std::uint64_t fill = 0;  // the word written outside the bounds

  // A dim of n elements, read in full.
  void push_dim(std::int64_t n, std::int64_t src_step, std::int64_t dst_step);
  // A dim of n elements whose source exists only for lo <= c < hi.
  void push_bounded_dim(std::int64_t n, std::int64_t src_step, std::int64_t dst_step, std::int64_t lo, std::int64_t hi);
};

// The box laid out contiguously in dst: dst strides row-major over the sizes.
void set_contiguous_dst(StridedCopy& copy);

// Records one dispatch that performs the copy (nothing for an empty box). `op` names errors.
void run_strided_copy(VulkanDevice& dev, const char* op, StridedCopy copy);

// Division of a 32-bit unsigned n by an invariant d >= 1 as a multiply-high and two shifts
// (Granlund and Montgomery, 1994): q = (t + ((n - t) >> s1)) >> s2 with t = mulhi(n, magic).
struct FastDiv {
  std::uint32_t d = 1;
  std::uint32_t magic = 0;
  std::uint32_t shifts = 0;  // s1 | s2 << 8
  explicit FastDiv(std::uint32_t divisor);
};

// GLSL: uint kiln_div(uint n, uint magic, uint shifts) with FastDiv's constants.
const char* glsl_fast_div();

// GLSL pointer type for raw elements of `bytes` (U8s, U16s, U32s, I64s), the type a kernel holds
// such an element in (uint for bytes and 16-bit words: narrow storage allows no narrow
// arithmetic), a load of ptr[index]
// as that type and a store of it.
const char* raw_pointer_type(std::size_t bytes);
const char* raw_value_type(std::size_t bytes);
std::string raw_load(std::size_t bytes, const std::string& ptr, const std::string& index);
std::string raw_store(std::size_t bytes, const std::string& ptr, const std::string& index, const std::string& value);

// The raw word of `value` in dtype t (f32, f16 or bf16 bits, i64, 0/1), as the copy's fill pattern.
std::uint64_t raw_word(double value, DType t);

// Throws (naming op) when a tensor is too large for the 32-bit element indices of these kernels.
void check_32bit_elements(const char* op, std::int64_t elements);

}  // namespace kiln::vk
