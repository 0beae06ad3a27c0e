// The one copy every CPU layout kernel reduces to: walk an N-d box of `size` in row-major order
// and copy element src[sum idx_d * src_stride_d] to dst[sum idx_d * dst_stride_d]. Source strides
// may be 0 (expand, repeat), negative (flip) or multiplied (slice steps); destination strides
// place the box inside a bigger output (cat, pad). Elements are moved as raw 1-, 4- or 8-byte
// words, so every dtype shares one kernel.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "kiln/devices/shape_plans.h"
#include "kiln/ops/shape.h"

namespace kiln::cpu {

struct StridedCopy {
  int rank = 0;
  std::array<std::int64_t, kMaxCopyRank> size{};
  std::array<std::int64_t, kMaxCopyRank> src_stride{};  // in elements
  std::array<std::int64_t, kMaxCopyRank> dst_stride{};  // in elements
  const std::byte* src = nullptr;                       // element at index (0, ..., 0)
  std::byte* dst = nullptr;
  std::size_t elem_bytes = 4;

  void push_dim(std::int64_t n, std::int64_t src_step, std::int64_t dst_step);
};

// Copies src into a fresh contiguous dst of the box's shape, or into dst's strides when given.
// Source and destination must not overlap.
void run_strided_copy(StridedCopy copy);

// The copy's box laid out contiguously in dst: dst strides are row-major over `size`.
void set_contiguous_dst(StridedCopy& copy);

// Fills `n` elements of `elem_bytes` each with the word in `pattern` (low bytes used).
void fill_elements(std::byte* dst, std::int64_t n, std::size_t elem_bytes, std::uint64_t pattern);

}  // namespace kiln::cpu
