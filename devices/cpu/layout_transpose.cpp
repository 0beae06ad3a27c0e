#include "kiln/devices/cpu/layout_transpose.h"

#include <algorithm>
#include <cstdint>

#include "kiln/devices/cpu/parallel.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace kiln::cpu::detail {
namespace {

// Tiles of 64 source-contiguous rows by 32 destination-contiguous columns, the best of the
// shapes tried on 1000..4096-square f32 transposes: a tile reads 256 bytes from each of 32
// source rows and writes 128 bytes to each of 64 destination rows, 24 KiB in all. Measured
// (2-core AMD EPYC VM, one thread): 1000^2 f32 about 55 GB/s (cache-resident), 1024^2 about
// 18 GB/s, where every row of a tile falls in one cache set; a large memcpy runs at 12-21 GB/s.
constexpr std::int64_t kTileRows = 64;
constexpr std::int64_t kTileCols = 32;

// Micro-block: d[i * d_row + j] = s[i + j * s_col] for i, j < kBlock<E>; 1 means scalar loops.
// AVX2 8 x 8 blocks beat AVX-512 16 x 16 ones on this Zen machine (512-bit lane shuffles are
// split in two there).
template <class E>
constexpr std::int64_t kBlock = 1;

#if defined(__AVX__)
template <>
constexpr std::int64_t kBlock<std::uint32_t> = 8;
template <>
constexpr std::int64_t kBlock<std::uint64_t> = 4;

// Shuffles move bits untouched, so float lanes carry any 4-byte word (NaN payloads included).
void block_transpose(const std::uint32_t* s, std::int64_t s_col, std::uint32_t* d, std::int64_t d_row) {
  const auto* f = reinterpret_cast<const float*>(s);
  __m256 r[8], t[8], u[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(f + j * s_col);
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    u[j] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  auto* o = reinterpret_cast<float*>(d);
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(o + i * d_row, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(o + (i + 4) * d_row, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}

void block_transpose(const std::uint64_t* s, std::int64_t s_col, std::uint64_t* d, std::int64_t d_row) {
  const auto* f = reinterpret_cast<const double*>(s);
  const __m256d r0 = _mm256_loadu_pd(f), r1 = _mm256_loadu_pd(f + s_col);
  const __m256d r2 = _mm256_loadu_pd(f + 2 * s_col), r3 = _mm256_loadu_pd(f + 3 * s_col);
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  auto* o = reinterpret_cast<double*>(d);
  _mm256_storeu_pd(o, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(o + d_row, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(o + 2 * d_row, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(o + 3 * d_row, _mm256_permute2f128_pd(t1, t3, 0x31));
}
#endif

template <class E>
void tile_transpose(const E* s, std::int64_t s_col, E* d, std::int64_t d_row, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t B = kBlock<E>;
  const std::int64_t full_rows = rows / B * B, full_cols = cols / B * B;
  if constexpr (B > 1) {
    for (std::int64_t j = 0; j < full_cols; j += B)
      for (std::int64_t i = 0; i < full_rows; i += B)
        block_transpose(s + (i + j * s_col), s_col, d + (i * d_row + j), d_row);
  } else {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) d[i * d_row + j] = s[i + j * s_col];
    return;
  }
  // Ragged edges: the columns right of the full blocks, then the rows below them.
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = full_cols; j < cols; ++j) d[i * d_row + j] = s[i + j * s_col];
  for (std::int64_t i = full_rows; i < rows; ++i)
    for (std::int64_t j = 0; j < full_cols; ++j) d[i * d_row + j] = s[i + j * s_col];
}

// Tiles over the last two dims of `c`: dim r-2 steps 1 in the source, dim r-1 steps 1 in dst.
template <class E>
void copy_tiles(const StridedCopy& c) {
  const int r = c.rank;
  const std::int64_t rows = c.size[r - 2], cols = c.size[r - 1];
  const std::int64_t s_col = c.src_stride[r - 1], d_row = c.dst_stride[r - 2];
  const std::int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  std::int64_t planes = 1;
  for (int d = 0; d < r - 2; ++d) planes *= c.size[d];
  const E* src = reinterpret_cast<const E*>(c.src);
  E* dst = reinterpret_cast<E*>(c.dst);
  const std::int64_t grain = std::max<std::int64_t>(1, kDefaultGrain / (kTileRows * cols));
  parallel_for(planes * row_tiles, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t task = b; task < e; ++task) {
      std::int64_t plane = task / row_tiles, so = 0, doff = 0;
      for (int d = r - 3; d >= 0; --d) {
        const std::int64_t at = plane % c.size[d];
        plane /= c.size[d];
        so += at * c.src_stride[d];
        doff += at * c.dst_stride[d];
      }
      const std::int64_t i0 = (task % row_tiles) * kTileRows, tile_rows = std::min(kTileRows, rows - i0);
      for (std::int64_t j0 = 0; j0 < cols; j0 += kTileCols)
        tile_transpose(src + (so + i0 + j0 * s_col), s_col, dst + (doff + i0 * d_row + j0), d_row, tile_rows,
                       std::min(kTileCols, cols - j0));
    }
  });
}

}  // namespace

bool try_copy_transposed(const StridedCopy& coalesced) {
  const int r = coalesced.rank;
  if (r < 2 || coalesced.dst_stride[r - 1] != 1 || coalesced.src_stride[r - 1] == 1 || coalesced.src_stride[r - 1] == 0)
    return false;
  // Any dim that is contiguous in the source may play the rows: each dim carries both of its
  // strides, so moving it next to the innermost one changes the walk, not the result.
  int rows_dim = -1;
  for (int d = 0; d < r - 1; ++d)
    if (coalesced.src_stride[d] == 1) rows_dim = d;
  if (rows_dim < 0 || coalesced.size[rows_dim] < 8 || coalesced.size[r - 1] < 8) return false;
  StridedCopy c = coalesced;
  for (int d = rows_dim; d < r - 2; ++d) {
    std::swap(c.size[d], c.size[d + 1]);
    std::swap(c.src_stride[d], c.src_stride[d + 1]);
    std::swap(c.dst_stride[d], c.dst_stride[d + 1]);
  }
  switch (c.elem_bytes) {
    case 1: copy_tiles<std::uint8_t>(c); return true;
    case 4: copy_tiles<std::uint32_t>(c); return true;
    case 8: copy_tiles<std::uint64_t>(c); return true;
    default: return false;
  }
}

}  // namespace kiln::cpu::detail
