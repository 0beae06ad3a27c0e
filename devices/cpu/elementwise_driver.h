// The tile walker behind every unfused elementwise kernel: it broadcasts the operands against
// the output, collapses the dims, and walks the output in tiles of at most kTile elements along
// the innermost contiguous run. Each operand's tile is either contiguous (stride 1) or a single
// repeated value (stride 0, broadcast along the inner dim); a tile whose dtype differs from the
// operand's compute dtype is cast into a small per-call buffer first. A tile of every operand is
// read before that tile of the output is written, so the output may be an input's buffer.
// Large outputs run in parallel over tiles (devices/cpu/parallel.h).
//
// The fused evaluator (fused_program.h) walks with the same driver: its `fn` evaluates a whole
// expression on the tile and writes several outputs, found from EwTile::first.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kiln/devices/cpu/elementwise_math.h"
#include "kiln/ops/ir.h"

namespace kiln::cpu {

inline constexpr int kMaxEwOperands = 16;
// Operands that may need a cast into the driver's tile buffers (one op has at most three).
inline constexpr int kMaxEwCasts = 4;

// One input as it lies in memory.
struct EwOperand {
  const void* data = nullptr;
  DType dtype = DType::f32;    // in the buffer
  DType compute = DType::f32;  // what the math reads
  Shape shape;                 // broadcastable to the output's shape
};

// What the math gets: n output elements at `out`; operand k's n elements, in its compute dtype,
// at in[k], or a single value repeated when stride[k] is 0.
// Only the walk's operand count of entries is set (not zeroed past it: a tile is made per 1024
// elements, and zeroing all 16 showed as 2% of a fused GELU).
struct EwTile {
  std::array<const void*, kMaxEwOperands> in;
  std::array<std::int64_t, kMaxEwOperands> stride;
  void* out = nullptr;
  std::int64_t n = 0;
  std::int64_t first = 0;  // linear index of the tile's first element in the output
  // With Prefetch::hand_over: where each contiguous operand's next tile starts (nullptr when
  // there is none to ask for) and its bytes, for fn to ask for while it computes.
  std::array<const std::byte*, kMaxEwOperands> next;
  std::size_t next_bytes[kMaxEwOperands];
};

using EwTileFn = void (*)(const EwTile& tile, const void* ctx);

// Asks for part `part` of `parts` of every operand's next tile (EwTile::next), into L2. A fused
// expression spends several passes on each tile in L1; asking for a slice of the next tile before
// each pass keeps memory busy all the while, where all of it at once would fill the miss buffers.
// Operands from `operands` on are not looked at (the caller's operand count).
void prefetch_next_part(const EwTile& tile, std::size_t operands, std::size_t part, std::size_t parts);
// Part `part` of `parts` of the `bytes` at p, into L2: for any kernel that makes several passes
// over a block in L1 and knows its next block.
void prefetch_part(const void* p, std::size_t bytes, std::size_t part, std::size_t parts);

// Whether an output of `bytes` at `out` is better written with non-temporal stores: it is too
// large to stay in the caches anyway, and no operand lies in it (in place, the lines are cached
// and owned already). A plain store first reads each line it writes: measured here, 16M-element
// add(x, 1.0) goes from about 16 to about 30 GB/s when streamed.
bool should_stream(const void* out, std::size_t bytes, std::span<const EwOperand> operands);

// Copies a finished tile to dst, with non-temporal stores for its whole cache lines. Other
// threads may read dst only after stream_fence() on this thread.
void stream_copy(std::byte* dst, const std::byte* src, std::size_t bytes);
void stream_fence();
// dst[i] = src[i] * scale, written like stream_copy: a scale pass and the copy in one.
void stream_scale(float* dst, const float* src, float scale, std::size_t n);

// Runs fn(tile, ctx) over every tile of the output. Operand shapes must broadcast to
// out_shape (the shape rules made sure); at most kMaxEwOperands operands, of which at most
// kMaxEwCasts need a cast. `out` may be null when fn writes its outputs itself; it may write
// them with stream_copy, since each parallel range ends with a store fence.
void run_elementwise(const Shape& out_shape, DType out_dtype, void* out, std::span<const EwOperand> operands,
                     EwTileFn fn, const void* ctx);

// The same walk, planned once and run over any range of output elements: a fused reduction
// asks for its prologue's values a piece of a row at a time.
// Tiles end where the full walk's tiles end, so values never depend on the range (the math
// functions give the same value for an element whatever its position in a tile).
class ElementwiseWalk {
 public:
  // `operands` must outlive the walk.
  ElementwiseWalk(const Shape& out_shape, DType out_dtype, void* out, std::span<const EwOperand> operands);
  // Output elements [begin, end): in parallel when the range is large, else on this thread.
  // With Prefetch::hand_over, each tile carries where every contiguous operand's next tile is
  // (EwTile::next) and fn asks for it itself, a part at a time while it computes
  // (prefetch_next_part; see run_tiles).
  enum class Prefetch : bool { none, hand_over };
  void run(std::int64_t begin, std::int64_t end, EwTileFn fn, const void* ctx,
           Prefetch prefetch = Prefetch::none) const;

 private:
  // The output's dims after broadcasting and collapsing: size-1 dims are gone, and neighbours
  // that every operand walks the same way (contiguously, or both broadcast) are merged.
  struct Layout {
    int rank = 0;
    std::array<std::int64_t, kMaxRank> size{};
    std::array<std::array<std::int64_t, kMaxRank>, kMaxEwOperands> stride{};  // in elements
  };
  static Layout collapse(const Shape& out, std::span<const EwOperand> operands);
  void run_tiles(std::int64_t t0, std::int64_t t1, std::int64_t begin, std::int64_t end, EwTileFn fn,
                 const void* ctx, Prefetch hint) const;

  Layout layout_;
  std::span<const EwOperand> operands_;  // the caller's, alive while the walk is
  std::array<CastFn, kMaxEwOperands> cast_{};  // nullptr when the operand is already in its compute dtype
  std::array<std::uint8_t, kMaxEwOperands> cast_buffer_{};  // which tile buffer a cast operand uses
  std::array<std::size_t, kMaxEwOperands> in_size_{};
  std::byte* out_ = nullptr;
  std::size_t out_size_ = 0;
  std::int64_t inner_ = 1, tiles_per_row_ = 1, rows_ = 0;
  bool stream_ = false;  // write tiles through a staging buffer and non-temporal stores
};

}  // namespace kiln::cpu
