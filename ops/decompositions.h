// Decomposition rules: an op rewritten into other ops that compute the same values, for a device
// that lacks it (or the variant it asks for) natively (devices/capabilities.h). The executor
// applies them when it plans a batch (scheduler/executor.cpp), so engine/ submits one high-level
// op whatever the device, and autograd records that op; as in PyTorch's decompositions and
// tinygrad's rewrite rules, each rule is also the oracle of the native kernels it stands in for
// (tests/ops/test_decompositions.cpp).
//
//   matmul with a transposed operand  ->  permute (a copy) + matmul
//   conv                              ->  unfold + matmul (+ add of the bias)
//   conv_input_grad                   ->  matmul (weight transposed) + fold
//   conv_weight_grad                  ->  unfold + matmul (columns transposed) + sum over the batch
//   max_pool                          ->  unfold (-inf padding) + max (+ argmax, positions: indices)
//   avg_pool                          ->  unfold + sum / divisors (the windows of a plane of ones)
//   max_pool_grad                     ->  scatter_add of dy into zeros at the indices
//   avg_pool_grad                     ->  dy / divisors, expanded over the window, fold
//   batch_norm                        ->  mean, var over all dims but the channels + elementwise ops
//   batch_norm_backward               ->  mean, var, sums over all dims but the channels + elementwise
//
// A rule's messages come in order and the last one writes the op's own outputs. An entity made
// in between takes its id from `next_id` (a range of the executor's own, apart from the engine's)
// and is handed over (ReadWrite) to the last message that reads it, so that it ends there; an
// input the op was handed over goes on to its last reader the same way. The messages a rule
// emits may need rules of their own (a conv_input_grad's transposed matmul): the caller applies
// them again to whatever the device still lacks.
#pragma once
#include <vector>

#include "kiln/ops/ir.h"

namespace kiln {

// Appends the decomposition of `op` to `out` and returns the rule's name ("matmul_transposed");
// nullptr, with nothing appended, where no rule rewrites that op.
const char* decompose(const OpIr& op, EntityId& next_id, std::vector<OpIr>& out);

}  // namespace kiln
