// The rules of the reduce family that both the API (engine/reduce.cpp) and the shape rules
// (ops/reduce.cpp) apply: which dims a reduction covers and what dtype it produces.
//
// Message encoding (ops/op_list.def): a dims reduction carries its dims in attrs.ints either
// empty (all dims) or normalized — sorted, unique, non-negative — so kernels never wrap or sort
// them. The API always sends the normalized list (a 0-d input reduces no dims: ints empty).
// argmax/argmin carry flag (false = over the flattened input), dim and keepdim; cumsum and
// softmax/log_softmax carry a non-negative dim.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/ops/ir.h"

namespace kiln {

// Sorted, unique, non-negative dims of the input `in`; empty `dims` means all dims. For a 0-d
// input, dims {} / {0} / {-1} all give {}. Throws kiln::Error naming `op` and the input on a
// dim out of range or a dim given twice.
std::vector<std::int64_t> normalize_reduce_dims(const char* op, const std::vector<std::int64_t>& dims,
                                                const TensorIr& in);
// One dim of `in` wrapped into [0, rank) (0 for a 0-d input); throws like the above.
int normalize_reduce_dim(const char* op, std::int64_t dim, const TensorIr& in);

// The shape after reducing `dims` (normalized) of `in`: size 1 when keepdim, dropped otherwise.
Shape reduced_shape(const Shape& in, const std::vector<std::int64_t>& dims, bool keepdim);

// The output dtype of a reduce-family op on an input of dtype `in`, torch 1.13's: sum/prod/
// cumsum of bool or i64 give i64; mean/var/std/softmax/log_softmax need f32; logsumexp gives
// f32; max/min keep the dtype; argmax/argmin give i64 (not defined for bool); any/all give
// bool. Throws kiln::Error naming the op and the input when the dtype is not supported.
DType reduce_output_dtype(OpKind kind, const TensorIr& in);

}  // namespace kiln
