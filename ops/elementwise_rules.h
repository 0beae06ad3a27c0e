// The dtype rules of elementwise ops, in one place. An elementwise op converts each value
// operand to one compute dtype, runs its math there, and writes an output dtype derived from
// it (comparisons compute in the promoted dtype and write bool). The shape rules, the unfused
// CPU kernels and the fusion planner all ask these functions, so they can never disagree.
//
// Promotion follows PyTorch for kiln's dtypes: bool < i64 < f16, bf16 < f32, and f16 next to
// bf16 gives f32. A scalar operand (attrs.scalar) next to an f16 or bf16 tensor takes the
// tensor's dtype; next to the others it counts as i64 when it is a whole number within i64's
// range and as f32 otherwise. 0-d tensors promote like any tensor (PyTorch lets a 0-d f32
// tensor next to an f16 one keep f16; kiln gives f32 there, its one departure).
// f16 and bf16 exist on some Vulkan devices only; the submission rejects them elsewhere.
#pragma once
#include <span>

#include "kiln/ops/ir.h"

namespace kiln {

// True for the kinds of the unary, binary and ternary families (cast and clamp included).
bool is_elementwise(OpKind kind);

DType promote_types(DType a, DType b);

// True when `value` is a whole number that an i64 holds exactly.
bool is_whole_scalar(double value);

// The dtype a scalar operand takes next to a tensor operand of dtype `tensor`.
DType scalar_operand_dtype(DType tensor, double value);

// The dtype in which the op's value operands are computed, from the dtypes of op.inputs (in
// order) and the attrs: add(i64, f32) -> f32, add(i64 tensor, 2.5) -> f32, exp(i64) -> f32,
// eq(i64, f32) -> f32, logical_and(f32, i64) -> bool, clamp(i64, min 0.5) -> f32,
// cast(x, dtype) -> dtype, exp(f16) -> f16, mul(f16 tensor, 0.1) -> f16, add(f16, bf16) -> f32.
// It does not validate: the shape rules reject unsupported combinations (abs of bool, sub of
// bool, ...) before any kernel sees them.
DType elementwise_compute_dtype(OpKind kind, std::span<const DType> inputs, const OpAttrs& attrs);
// The same for a message, with PyTorch's rule for 0-d inputs next to inputs with dims: they lift
// the dtype only into a higher category (add(i64[3], f32[]) -> f32, add(f16[3], f32[]) -> f16).
DType elementwise_compute_dtype(const OpIr& op);

// The dtype operand `index` is converted to before the math runs: the compute dtype, except
// where's condition, which stays bool.
DType elementwise_operand_dtype(OpKind kind, std::size_t index, DType compute);

// The dtype of the op's result: bool for comparisons, logical ops, isnan and isinf; the compute
// dtype otherwise (which is attrs.dtype for cast).
DType elementwise_output_dtype(OpKind kind, DType compute);

}  // namespace kiln
