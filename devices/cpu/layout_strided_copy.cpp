// The strided copy behind every CPU layout kernel. The box is first coalesced (size-1 dims
// dropped, neighbours that step together in both src and dst merged), so a contiguous copy of
// any rank is one memcpy and a permute only walks the dims it really reorders. The element
// order is then cut into chunks for oneTBB; a chunk walks whole or partial inner rows, each row
// being one tight loop chosen by its strides. A box whose source-contiguous dim is not the
// innermost one (a transpose) takes the cache-blocked path of layout_transpose.cpp instead.
#include "kiln/devices/cpu/layout_strided_copy.h"

#include <algorithm>
#include <cstring>

#include "kiln/devices/cpu/layout_transpose.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/base/error.h"

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
template <class E>
void copy_row(const E* s, std::int64_t ss, E* d, std::int64_t ds, std::int64_t n) {
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
template <class E>
void copy_range(const StridedCopy& c, std::int64_t begin, std::int64_t end) {
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

template <class E>
void run_typed(const StridedCopy& c, std::int64_t numel) {
  parallel_for(numel, [&](std::int64_t b, std::int64_t e) { copy_range<E>(c, b, e); });
}

template <class E>
void fill_typed(std::byte* dst, std::int64_t n, std::uint64_t pattern) {
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
  if (detail::try_copy_transposed(c)) return;
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
