// The math of every elementwise op, on contiguous runs of elements. This is the only place an
// elementwise op's arithmetic lives: the unfused CPU kernels and the fused-expression evaluator
// both call these functions, which is what makes fused and unfused results bit-identical.
//
// Contract of every function here:
//   - operands hold n elements of the op's compute dtype (ops/elementwise_rules.h), or one
//     value repeated when its stride is 0; the output holds n elements of the output dtype;
//   - the output may alias any operand (in-place reuse, tile reuse in fused kernels);
//   - element i of the result depends only on element i of the operands: the vector body and
//     the tail give the same bits, whatever n is and wherever i falls.
#pragma once
#include <cstdint>

#include "kiln/ops/ir.h"

namespace kiln::cpu {

// Elements per tile in tile-wise elementwise evaluation: a few tiles of every operand stay in L1.
inline constexpr std::int64_t kTile = 1024;

// y = op(x); attrs carry op parameters (clamp bounds, ...).
using UnaryFn = void (*)(const void* x, void* y, std::int64_t n, const OpAttrs& attrs);
// y = op(a, b); a stride of 0 means that operand is a single value repeated n times.
using BinaryFn = void (*)(const void* a, std::int64_t a_stride, const void* b, std::int64_t b_stride, void* y,
                          std::int64_t n);
// y = cond ? a : b (cond is bool); strides as for BinaryFn.
using WhereFn = void (*)(const void* cond, std::int64_t c_stride, const void* a, std::int64_t a_stride,
                         const void* b, std::int64_t b_stride, void* y, std::int64_t n);
// y = cast(x) from one dtype to another.
using CastFn = void (*)(const void* x, void* y, std::int64_t n);

// Lookups, done once per kernel (never per element). `compute` is the dtype the operands are
// in; nullptr when the op does not support it (the shape rules reject those cases first).
UnaryFn unary_fn(OpKind kind, DType compute);
BinaryFn binary_fn(OpKind kind, DType compute);
WhereFn where_fn(DType compute);
CastFn cast_fn(DType from, DType to);

// A scalar op on an f32 value before it is stored. In a fused expression, a node that only
// combines its one operand with a scalar (t + s, s - t, t * s, t / s, ...) is done by the node
// that makes t, in registers, when nothing else reads t (or by a unary node that reads it, on
// its operand): a pass over the tile saved, and the same bits, since either way it is one
// rounded operation on the same two values.
enum class PostOp : std::uint8_t { none, add, sub, rsub, mul, div };  // rsub: s - t
// How a post op runs: v * scale + offset, each rounded on its own, for the adds, subtractions
// and multiplies (t - s is exactly t + -s, s - t is (-t) + s; the identities 1 and -0 fill the
// unused place, and -0 is the one that keeps every x, -0 included, as it is), or v / divisor.
// No branch per vector: the two forms are separate instantiations.
struct Post {
  bool divides = false;
  float scale = 1.0f, offset = -0.0f, divisor = 1.0f;
};
Post make_post(PostOp op, float scalar);
// What node kind `kind` is as a post op, with its scalar at operand `scalar_operand` (0 or 1);
// none where it is none (s / t is not: it would be a third form).
PostOp post_op_of(OpKind kind, int scalar_operand);
// y = post(op(pre(x))): a unary node may also take the scalar op that makes its operand.
using UnaryPostFn = void (*)(const void* x, void* y, std::int64_t n, const OpAttrs& attrs, Post pre, Post post);
using BinaryPostFn = void (*)(const void* a, std::int64_t a_stride, const void* b, std::int64_t b_stride, void* y,
                              std::int64_t n, Post post);
// The f32 ops that take a post op: those whose result is an f32 value; nullptr for the others.
UnaryPostFn unary_post_fn(OpKind kind);
BinaryPostFn binary_post_fn(OpKind kind);

// Whether 1 / b is exactly a float, so that a * (1 / b) rounds to the same bits as a / b: b is a
// normal power of two (its reciprocal may be subnormal, but then exactly so).
bool exact_reciprocal(float b);

}  // namespace kiln::cpu
