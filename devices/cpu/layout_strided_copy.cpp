// The strided copy behind every CPU layout kernel. The box is first coalesced (size-1 dims
// dropped, neighbours that step together in both src and dst merged), so a contiguous copy of
// any rank is one memcpy and a permute only walks the dims it really reorders. The element
// order is then cut into chunks for oneTBB; a chunk walks whole or partial inner rows, each row
// being one tight loop chosen by its strides. Permutes that swap the two innermost dims of a
// big box take a cache-blocked transpose instead: one read per cache line, not one per element.
#include "devices/cpu/layout_strided_copy.h"

#include <algorithm>
#include <cstring>

#include "devices/cpu/parallel.h"
#include "ops/error.h"

namespace kiln::cpu {

void StridedCopy::push_dim(std::int64_t n, std::int64_t src_step, std::int64_t dst_step) {
  KILN_CHECK(rank < kMaxCopyRank, "layout", "internal error: copy rank above " + std::to_string(kMaxCopyRank));
  size[rank] = n;
  src_stride[rank] = src_step;
  dst_stride[rank] = dst_step;
  ++rank;
}

void set_contiguous_dst(StridedCopy& copy) {
  std::int64_t acc = 1;
  for (int d = copy.rank - 1; d >= 0; --d) {
    copy.dst_stride[d] = acc;
    acc *= copy.size[d];
  }
}

namespace {

// Square tiles of the transpose path: 32 x 32 words keeps a tile's source lines and its
// destination lines in L1 together for every element size.
constexpr std::int64_t kTile = 32;

StridedCopy coalesce(const StridedCopy& c) {
  StridedCopy o = c;
  o.rank = 0;
  for (int d = 0; d < c.rank; ++d) {
    if (c.size[d] == 1) continue;
    if (o.rank > 0) {
      const int p = o.rank - 1;
      if (o.src_stride[p] == c.src_stride[d] * c.size[d] && o.dst_stride[p] == c.dst_stride[d] * c.size[d]) {
        o.size[p] *= c.size[d];
        o.src_stride[p] = c.src_stride[d];
        o.dst_stride[p] = c.dst_stride[d];
        continue;
      }
    }
    o.size[o.rank] = c.size[d];
    o.src_stride[o.rank] = c.src_stride[d];
    o.dst_stride[o.rank] = c.dst_stride[d];
    ++o.rank;
  }
  if (o.rank == 0) {
    o.rank = 1;
    o.size[0] = 1;
    o.src_stride[0] = 1;
    o.dst_stride[0] = 1;
  }
  return o;
}

// One inner row; each stride pattern gets a loop the compiler can vectorize on its own.
template <class E> void copy_row(const E* s, std::int64_t ss, E* d, std::int64_t ds, std::int64_t n) {
  if (ds == 1) {
    if (ss == 1) {
      std::memcpy(d, s, static_cast<std::size_t>(n) * sizeof(E));
    } else if (ss == 0) {
      const E v = *s;
      for (std::int64_t k = 0; k < n; ++k) d[k] = v;
    } else if (ss == -1) {
      for (std::int64_t k = 0; k < n; ++k) d[k] = s[-k];
    } else {
      for (std::int64_t k = 0; k < n; ++k) d[k] = s[k * ss];
    }
    return;
  }
  for (std::int64_t k = 0; k < n; ++k) d[k * ds] = s[k * ss];
}

// Elements [begin, end) of the box in row-major order.
template <class E> void copy_range(const StridedCopy& c, std::int64_t begin, std::int64_t end) {
  const int inner = c.rank - 1;
  const std::int64_t row_len = c.size[inner], ss = c.src_stride[inner], ds = c.dst_stride[inner];
  std::array<std::int64_t, kMaxCopyRank> idx{};
  std::int64_t row = begin / row_len, col = begin % row_len;
  std::int64_t so = 0, doff = 0;
  for (int d = inner - 1; d >= 0; --d) {
    idx[d] = row % c.size[d];
    row /= c.size[d];
    so += idx[d] * c.src_stride[d];
    doff += idx[d] * c.dst_stride[d];
  }
  const E* src = reinterpret_cast<const E*>(c.src);
  E* dst = reinterpret_cast<E*>(c.dst);
  for (std::int64_t i = begin; i < end;) {
    const std::int64_t n = std::min(row_len - col, end - i);
    copy_row(src + (so + col * ss), ss, dst + (doff + col * ds), ds, n);
    i += n;
    col = 0;
    for (int d = inner - 1; d >= 0; --d) {
      so += c.src_stride[d];
      doff += c.dst_stride[d];
      if (++idx[d] < c.size[d]) break;
      so -= c.src_stride[d] * c.size[d];
      doff -= c.dst_stride[d] * c.size[d];
      idx[d] = 0;
    }
  }
}

// The two innermost dims form planes: rows step 1 in the source, columns step 1 in dst.
bool is_inner_transpose(const StridedCopy& c) {
  if (c.rank < 2) return false;
  const int r = c.rank;
  return c.src_stride[r - 2] == 1 && c.dst_stride[r - 1] == 1 && c.src_stride[r - 1] != 0 &&
         c.size[r - 2] >= kTile / 2 && c.size[r - 1] >= kTile / 2;
}

template <class E> void transpose_tile(const E* s, std::int64_t s_col, E* d, std::int64_t d_row, std::int64_t rows,
                                       std::int64_t cols) {
  if (rows == kTile && cols == kTile) {
    // Constant trip counts let the compiler unroll and vectorize the full tiles.
    for (std::int64_t i = 0; i < kTile; ++i)
      for (std::int64_t j = 0; j < kTile; ++j) d[i * d_row + j] = s[i + j * s_col];
    return;
  }
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) d[i * d_row + j] = s[i + j * s_col];
}

template <class E> void copy_transposed(const StridedCopy& c) {
  const int r = c.rank;
  const std::int64_t rows = c.size[r - 2], cols = c.size[r - 1];
  const std::int64_t s_col = c.src_stride[r - 1], d_row = c.dst_stride[r - 2];
  const std::int64_t row_blocks = (rows + kTile - 1) / kTile;
  std::int64_t planes = 1;
  for (int d = 0; d < r - 2; ++d) planes *= c.size[d];
  const E* src = reinterpret_cast<const E*>(c.src);
  E* dst = reinterpret_cast<E*>(c.dst);
  const std::int64_t grain = std::max<std::int64_t>(1, kDefaultGrain / (kTile * cols));
  parallel_for(planes * row_blocks, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t task = b; task < e; ++task) {
      std::int64_t plane = task / row_blocks, so = 0, doff = 0;
      for (int d = r - 3; d >= 0; --d) {
        const std::int64_t id = plane % c.size[d];
        plane /= c.size[d];
        so += id * c.src_stride[d];
        doff += id * c.dst_stride[d];
      }
      const std::int64_t i0 = (task % row_blocks) * kTile, i_n = std::min(kTile, rows - i0);
      for (std::int64_t j0 = 0; j0 < cols; j0 += kTile)
        transpose_tile(src + (so + i0 + j0 * s_col), s_col, dst + (doff + i0 * d_row + j0), d_row, i_n,
                       std::min(kTile, cols - j0));
    }
  });
}

template <class E> void run_typed(const StridedCopy& c, std::int64_t numel) {
  if (is_inner_transpose(c)) {
    copy_transposed<E>(c);
    return;
  }
  parallel_for(numel, [&](std::int64_t b, std::int64_t e) { copy_range<E>(c, b, e); });
}

template <class E> void fill_typed(std::byte* dst, std::int64_t n, std::uint64_t pattern) {
  E v;
  std::memcpy(&v, &pattern, sizeof(E));  // little-endian: the low bytes hold the word
  E* d = reinterpret_cast<E*>(dst);
  parallel_for(n, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t k = b; k < e; ++k) d[k] = v;
  });
}

}  // namespace

void run_strided_copy(StridedCopy copy) {
  std::int64_t numel = 1;
  for (int d = 0; d < copy.rank; ++d) numel *= copy.size[d];
  if (numel == 0) return;
  const StridedCopy c = coalesce(copy);
  switch (copy.elem_bytes) {
    case 1: run_typed<std::uint8_t>(c, numel); break;
    case 4: run_typed<std::uint32_t>(c, numel); break;
    case 8: run_typed<std::uint64_t>(c, numel); break;
    default: throw Error("layout", "unsupported element size " + std::to_string(copy.elem_bytes));
  }
}

void fill_elements(std::byte* dst, std::int64_t n, std::size_t elem_bytes, std::uint64_t pattern) {
  if (n <= 0) return;
  switch (elem_bytes) {
    case 1: fill_typed<std::uint8_t>(dst, n, pattern); break;
    case 4: fill_typed<std::uint32_t>(dst, n, pattern); break;
    case 8: fill_typed<std::uint64_t>(dst, n, pattern); break;
    default: throw Error("layout", "unsupported element size " + std::to_string(elem_bytes));
  }
}

}  // namespace kiln::cpu
