#include "kiln/devices/cpu/elementwise_driver.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kiln/devices/cpu/parallel.h"
#include "kiln/base/error.h"

namespace kiln::cpu {

namespace {

constexpr std::size_t kStreamBytes = std::size_t{8} << 20;

}  // namespace

void prefetch_part(const void* p, std::size_t bytes, std::size_t part, std::size_t parts) {
  const auto* at = static_cast<const char*>(p);
  const std::size_t from = bytes * part / parts & ~std::size_t{63};
  const std::size_t to = part + 1 == parts ? bytes : bytes * (part + 1) / parts & ~std::size_t{63};
  for (std::size_t i = from; i < to; i += 64) _mm_prefetch(at + i, _MM_HINT_T1);
}

void prefetch_next_part(const EwTile& tile, std::size_t operands, std::size_t part, std::size_t parts) {
  for (std::size_t k = 0; k < operands; ++k)
    if (tile.next[k]) prefetch_part(tile.next[k], tile.next_bytes[k], part, parts);
}

ElementwiseWalk::Layout ElementwiseWalk::collapse(const Shape& out, std::span<const EwOperand> operands) {
  const int rank = out.rank();
  std::array<std::array<std::int64_t, kMaxRank>, kMaxEwOperands> full{};  // broadcast strides
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const Shape& s = operands[k].shape;
    const Shape cs = contiguous_strides(s);
    for (int d = 0; d < rank; ++d) {
      const int sd = d - (rank - s.rank());
      full[k][d] = sd >= 0 && s[sd] != 1 ? cs[sd] : 0;
    }
  }
  Layout l;
  for (int d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = l.rank > 0;
    for (std::size_t k = 0; merge && k < operands.size(); ++k) merge = l.stride[k][l.rank - 1] == full[k][d] * out[d];
    if (merge) {
      l.size[l.rank - 1] *= out[d];
    } else {
      l.size[l.rank] = out[d];
      ++l.rank;
    }
    for (std::size_t k = 0; k < operands.size(); ++k) l.stride[k][l.rank - 1] = full[k][d];
  }
  if (l.rank == 0) {  // a single element (0-d or all dims 1): every stride 0
    l.rank = 1;
    l.size[0] = 1;
  }
  return l;
}

// Runs tiles [t0, t1), clipped to output elements [begin, end): tile t covers part
// t % tiles_per_row_ of row t / tiles_per_row_.
//
// Prefetch::hand_over: each tile carries the walk's next tile (EwTile::next), and the fused
// expression asks for a slice of it before each of its passes over this one (into L2): a tile's
// passes take as long as its memory traffic, and the hardware prefetcher stops at each 4 KiB
// page (one tile of f32). gelu_fused, 16M on 2 cores: 9.0-10.9 ms without, 7.1-9.9 with; a
// reduction pulling its prologue (sum(x * x)): 2.6-2.9 ms with the whole next tile asked for at
// once into L1, 1.8-2.1 with the slices. Not for single-op walks: a whole-tile hint slowed a
// native GELU, which streams its output, from 2.3 to 3.0 ms.
void ElementwiseWalk::run_tiles(std::int64_t t0, std::int64_t t1, std::int64_t begin, std::int64_t end, EwTileFn fn,
                                const void* ctx, Prefetch hint) const {
  alignas(64) std::byte buffers[kMaxEwCasts][kTile * 8];
  alignas(64) std::byte staged[kTile * 8];
  const int outer = layout_.rank - 1;
  const std::size_t n_ops = operands_.size();
  // Where each operand's row `row` starts, in elements.
  auto row_offsets = [&](std::int64_t row, std::array<std::int64_t, kMaxEwOperands>& offset) {
    offset.fill(0);
    for (std::int64_t r = row, d = outer - 1; d >= 0; --d) {
      const std::int64_t i = r % layout_.size[d];
      r /= layout_.size[d];
      for (std::size_t k = 0; k < n_ops; ++k) offset[k] += i * layout_.stride[k][d];
    }
  };
  std::array<std::int64_t, kMaxEwOperands> offset{}, next_offset{};
  for (std::int64_t t = t0; t < t1; ++t) {
    const std::int64_t row = t / tiles_per_row_;
    const std::int64_t tile_start = (t % tiles_per_row_) * kTile;
    const std::int64_t start = std::max(tile_start, begin - row * inner_);
    const std::int64_t stop = std::min(std::min(tile_start + kTile, inner_), end - row * inner_);
    row_offsets(row, offset);
    EwTile tile;
    if (hint != Prefetch::none) {
      std::fill_n(tile.next.begin(), n_ops, nullptr);
      std::fill_n(tile.next_bytes, n_ops, 0);
      // The walk's next tile: the rest of this row, or the start of the next one. An operand
      // whose next tile is this one again (broadcast along the rows) is already in cache.
      const bool same_row = tile_start + kTile < inner_;
      const std::int64_t next_row = same_row ? row : row + 1;
      const std::int64_t next_start = same_row ? tile_start + kTile : 0;
      if (next_row < rows_) {
        if (same_row)
          next_offset = offset;
        else
          row_offsets(next_row, next_offset);
        const std::int64_t n = std::min(kTile, inner_ - next_start);
        for (std::size_t k = 0; k < n_ops; ++k) {
          const std::int64_t s = layout_.stride[k][outer];
          const std::int64_t at = next_offset[k] + next_start * s, now = offset[k] + tile_start * s;
          if (s == 0 || at == now) continue;
          const std::byte* p = static_cast<const std::byte*>(operands_[k].data) + static_cast<std::size_t>(at) * in_size_[k];
          tile.next[k] = p;
          tile.next_bytes[k] = static_cast<std::size_t>(n) * in_size_[k];
        }
      }
    }
    tile.n = stop - start;
    tile.first = row * inner_ + start;
    std::byte* const dst = out_ ? out_ + static_cast<std::size_t>(tile.first) * out_size_ : nullptr;
    tile.out = stream_ ? staged : dst;
    for (std::size_t k = 0; k < n_ops; ++k) {
      const std::int64_t s = layout_.stride[k][outer];  // 0 or 1
      const auto* src = static_cast<const std::byte*>(operands_[k].data) +
                        static_cast<std::size_t>(offset[k] + start * s) * in_size_[k];
      tile.stride[k] = s;
      if (cast_[k]) {
        cast_[k](src, buffers[cast_buffer_[k]], s ? tile.n : 1);
        tile.in[k] = buffers[cast_buffer_[k]];
      } else {
        tile.in[k] = src;
      }
    }
    fn(tile, ctx);
    if (stream_) stream_copy(dst, staged, static_cast<std::size_t>(tile.n) * out_size_);
  }
  // Order the streamed lines before the task completes; without `out` fn may have streamed.
  if (stream_ || out_ == nullptr) stream_fence();
}

ElementwiseWalk::ElementwiseWalk(const Shape& out_shape, DType out_dtype, void* out,
                                 std::span<const EwOperand> operands)
    : layout_(collapse(out_shape, operands)),
      operands_(operands),
      out_(static_cast<std::byte*>(out)),
      out_size_(dtype_size(out_dtype)) {
  KILN_CHECK(operands.size() <= kMaxEwOperands, "elementwise", "too many operands (internal error)");
  stream_ = should_stream(out, static_cast<std::size_t>(out_shape.numel()) * out_size_, operands);
  int casts = 0;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const EwOperand& o = operands[k];
    in_size_[k] = dtype_size(o.dtype);
    if (o.dtype != o.compute) {
      KILN_CHECK(casts < kMaxEwCasts, "elementwise", "too many operands to cast (internal error)");
      cast_buffer_[k] = static_cast<std::uint8_t>(casts++);
      cast_[k] = cast_fn(o.dtype, o.compute);
      KILN_CHECK(cast_[k] != nullptr, "elementwise",
                 std::string("no conversion from ") + dtype_name(o.dtype) + " to " + dtype_name(o.compute));
    }
  }
  inner_ = layout_.size[layout_.rank - 1];
  tiles_per_row_ = (inner_ + kTile - 1) / kTile;
  rows_ = inner_ ? out_shape.numel() / inner_ : 0;
}

void ElementwiseWalk::run(std::int64_t begin, std::int64_t end, EwTileFn fn, const void* ctx,
                          Prefetch prefetch) const {
  if (end <= begin) return;
  auto tile_of = [this](std::int64_t e) { return e / inner_ * tiles_per_row_ + e % inner_ / kTile; };
  const std::int64_t t0 = tile_of(begin), t1 = tile_of(end - 1) + 1;
  const std::int64_t grain = std::max<std::int64_t>(1, kDefaultGrain / std::min(inner_, kTile));
  if (t1 - t0 <= grain) {
    run_tiles(t0, t1, begin, end, fn, ctx, prefetch);
    return;
  }
  parallel_for(t1 - t0, grain,
               [&](std::int64_t b, std::int64_t e) { run_tiles(t0 + b, t0 + e, begin, end, fn, ctx, prefetch); });
}

bool should_stream(const void* out, std::size_t bytes, std::span<const EwOperand> operands) {
  if (out == nullptr || bytes < kStreamBytes) return false;
  const auto out_begin = reinterpret_cast<std::uintptr_t>(out);
  for (const EwOperand& o : operands) {
    const auto begin = reinterpret_cast<std::uintptr_t>(o.data);
    const auto end = begin + static_cast<std::size_t>(o.shape.numel()) * dtype_size(o.dtype);
    if (begin < out_begin + bytes && out_begin < end) return false;
  }
  return true;
}

void stream_copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
  const std::size_t head = std::min(bytes, (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64);
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_loadu_si512(src + i));
#else
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32)));
#endif
  }
  std::memcpy(dst + i, src + i, bytes - i);
}

void stream_scale(float* dst, const float* src, float scale, std::size_t n) {
  std::size_t i = 0;
  for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 64; ++i) dst[i] = src[i] * scale;
#if defined(__AVX512F__)
  const __m512 s = _mm512_set1_ps(scale);
  for (; i + 16 <= n; i += 16) _mm512_stream_ps(dst + i, _mm512_mul_ps(_mm512_loadu_ps(src + i), s));
#else
  const __m256 s = _mm256_set1_ps(scale);
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_mul_ps(_mm256_loadu_ps(src + i), s));
#endif
  for (; i < n; ++i) dst[i] = src[i] * scale;
}

void stream_fence() { _mm_sfence(); }

void run_elementwise(const Shape& out_shape, DType out_dtype, void* out, std::span<const EwOperand> operands,
                     EwTileFn fn, const void* ctx) {
  const std::int64_t numel = out_shape.numel();
  if (numel == 0) return;
  ElementwiseWalk(out_shape, out_dtype, out, operands).run(0, numel, fn, ctx);
}

}  // namespace kiln::cpu
