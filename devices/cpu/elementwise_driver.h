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

// Runs fn(tile, ctx) over every tile of the output. Operand shapes must broadcast to
// out_shape (the shape rules made sure); at most kMaxEwOperands operands, of which at most
// kMaxEwCasts need a cast. `out` may be null when fn writes its outputs itself.
void run_elementwise(const Shape& out_shape, DType out_dtype, void* out, std::span<const EwOperand> operands,
                     EwTileFn fn, const void* ctx);

}  // namespace kiln::cpu
