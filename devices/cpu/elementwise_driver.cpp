#include "devices/cpu/elementwise_driver.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "devices/cpu/parallel.h"
#include "ops/error.h"

namespace kiln::cpu {

namespace {

constexpr std::size_t kStreamBytes = std::size_t{8} << 20;

// The output's dims after broadcasting and collapsing: size-1 dims are gone, and neighbours
// that every operand walks the same way (contiguously, or both broadcast) are merged.
struct Layout {
  int rank = 0;
  std::array<std::int64_t, kMaxRank> size{};
  std::array<std::array<std::int64_t, kMaxRank>, kMaxEwOperands> stride{};  // in elements
};

Layout collapse(const Shape& out, std::span<const EwOperand> operands) {
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

struct Walk {
  Layout layout;
  std::span<const EwOperand> operands;
  std::array<CastFn, kMaxEwOperands> cast{};  // nullptr when the operand is already in its compute dtype
  std::array<std::uint8_t, kMaxEwOperands> cast_buffer{};  // which tile buffer a cast operand uses
  std::array<std::size_t, kMaxEwOperands> in_size{}, compute_size{};
  std::byte* out;
  std::size_t out_size;
  std::int64_t inner, tiles_per_row;
  bool stream;  // write tiles through a staging buffer and non-temporal stores
  EwTileFn fn;
  const void* ctx;

  // Runs tiles [begin, end): tile t covers part t % tiles_per_row of row t / tiles_per_row.
  void run(std::int64_t begin, std::int64_t end) const {
    alignas(64) std::byte buffers[kMaxEwCasts][kTile * 8];
    alignas(64) std::byte staged[kTile * 8];
    const int outer = layout.rank - 1;
    const std::size_t n_ops = operands.size();
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t row = t / tiles_per_row;
      const std::int64_t start = (t % tiles_per_row) * kTile;
      std::array<std::int64_t, kMaxEwOperands> offset{};
      for (std::int64_t r = row, d = outer - 1; d >= 0; --d) {
        const std::int64_t i = r % layout.size[d];
        r /= layout.size[d];
        for (std::size_t k = 0; k < n_ops; ++k) offset[k] += i * layout.stride[k][d];
      }
      EwTile tile;
      tile.n = std::min(kTile, inner - start);
      tile.first = row * inner + start;
      std::byte* const dst = out ? out + static_cast<std::size_t>(tile.first) * out_size : nullptr;
      tile.out = stream ? staged : dst;
      for (std::size_t k = 0; k < n_ops; ++k) {
        const std::int64_t s = layout.stride[k][outer];  // 0 or 1
        const auto* src = static_cast<const std::byte*>(operands[k].data) +
                          static_cast<std::size_t>(offset[k] + start * s) * in_size[k];
        tile.stride[k] = s;
        if (cast[k]) {
          cast[k](src, buffers[cast_buffer[k]], s ? tile.n : 1);
          tile.in[k] = buffers[cast_buffer[k]];
        } else {
          tile.in[k] = src;
        }
      }
      fn(tile, ctx);
      if (stream) stream_copy(dst, staged, static_cast<std::size_t>(tile.n) * out_size);
    }
    // Order the streamed lines before the task completes; without `out` fn may have streamed.
    if (stream || out == nullptr) stream_fence();
  }
};

}  // namespace

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

void stream_fence() { _mm_sfence(); }

void run_elementwise(const Shape& out_shape, DType out_dtype, void* out, std::span<const EwOperand> operands,
                     EwTileFn fn, const void* ctx) {
  KILN_CHECK(operands.size() <= kMaxEwOperands, "elementwise", "too many operands (internal error)");
  const std::int64_t numel = out_shape.numel();
  if (numel == 0) return;
  Walk w{collapse(out_shape, operands), operands, {}, {}, {}, {}, static_cast<std::byte*>(out), dtype_size(out_dtype),
         0, 0, false, fn, ctx};
  w.stream = should_stream(out, static_cast<std::size_t>(numel) * w.out_size, operands);
  int casts = 0;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const EwOperand& o = operands[k];
    w.in_size[k] = dtype_size(o.dtype);
    if (o.dtype != o.compute) {
      KILN_CHECK(casts < kMaxEwCasts, "elementwise", "too many operands to cast (internal error)");
      w.cast_buffer[k] = static_cast<std::uint8_t>(casts++);
      w.cast[k] = cast_fn(o.dtype, o.compute);
      KILN_CHECK(w.cast[k] != nullptr, "elementwise",
                 std::string("no conversion from ") + dtype_name(o.dtype) + " to " + dtype_name(o.compute));
    }
  }
  w.inner = w.layout.size[w.layout.rank - 1];
  w.tiles_per_row = (w.inner + kTile - 1) / kTile;
  const std::int64_t tiles = numel / w.inner * w.tiles_per_row;
  const std::int64_t per_tile = std::min(w.inner, kTile);
  const std::int64_t grain = std::max<std::int64_t>(1, kDefaultGrain / per_tile);
  parallel_for(tiles, grain, [&w](std::int64_t b, std::int64_t e) { w.run(b, e); });
}

}  // namespace kiln::cpu
