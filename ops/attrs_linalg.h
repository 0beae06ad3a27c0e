// Typed attributes of matmul: which operands enter transposed (a device that reads them in place,
// the CPU, takes the flags; others get transposed copies from the engine). Encoded as ints =
// [transpose_a, transpose_b], or no ints when neither is: a plain matmul's message, and its
// plan and fused-kernel cache keys, stay as they were before the flags existed.
//
// Encode with MatmulAttrs{.transpose_a = ta, .transpose_b = tb}.encode(); decode with
// MatmulAttrs::decode(op) in a shape rule, kernel or backward rule.
#pragma once
#include "kiln/ops/ir.h"

namespace kiln {

struct MatmulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;

  OpAttrs encode() const;
  // kiln::Error naming matmul unless ints is empty or [0 or 1, 0 or 1].
  static MatmulAttrs decode(OpKind kind, const OpAttrs& attrs);
  static MatmulAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }
  bool operator==(const MatmulAttrs&) const = default;
};

}  // namespace kiln
