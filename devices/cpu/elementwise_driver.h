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

#include "devices/cpu/elementwise_math.h"
#include "ops/ir.h"

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
struct EwTile {
  std::array<const void*, kMaxEwOperands> in{};
  std::array<std::int64_t, kMaxEwOperands> stride{};
  void* out = nullptr;
  std::int64_t n = 0;
  std::int64_t first = 0;  // linear index of the tile's first element in the output
};

using EwTileFn = void (*)(const EwTile& tile, const void* ctx);

// Whether an output of `bytes` at `out` is better written with non-temporal stores: it is too
// large to stay in the caches anyway, and no operand lies in it (in place, the lines are cached
// and owned already). A plain store first reads each line it writes: measured here, 16M-element
// add(x, 1.0) goes from about 16 to about 30 GB/s when streamed.
bool should_stream(const void* out, std::size_t bytes, std::span<const EwOperand> operands);

// Copies a finished tile to dst, with non-temporal stores for its whole cache lines. Other
// threads may read dst only after stream_fence() on this thread.
void stream_copy(std::byte* dst, const std::byte* src, std::size_t bytes);
void stream_fence();

// Runs fn(tile, ctx) over every tile of the output. Operand shapes must broadcast to
// out_shape (the shape rules made sure); at most kMaxEwOperands operands, of which at most
// kMaxEwCasts need a cast. `out` may be null when fn writes its outputs itself; it may write
// them with stream_copy, since each parallel range ends with a store fence.
void run_elementwise(const Shape& out_shape, DType out_dtype, void* out, std::span<const EwOperand> operands,
                     EwTileFn fn, const void* ctx);

}  // namespace kiln::cpu
