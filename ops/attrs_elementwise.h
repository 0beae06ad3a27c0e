// Typed attributes of clamp, the one elementwise op with more than a scalar: which bounds exist
// and their values. Encoded as ints = [has_min, has_max], scalar = min, scalar2 = max. Read by
// the dtype rule, both devices' kernels (the CPU's loops, Vulkan's fused GLSL), the fused-kernel
// key (which bounds exist shape the kernel; their values are arguments) and autograd's rule.
#pragma once
#include "kiln/ops/ir.h"

namespace kiln {

struct ClampAttrs {
  bool has_min = false, has_max = false;
  double min = 0.0, max = 0.0;  // only where has_min / has_max

  OpAttrs encode() const;
  // kiln::Error naming clamp unless ints = [0 or 1, 0 or 1] (the shape rule then requires one).
  static ClampAttrs decode(OpKind kind, const OpAttrs& attrs);
  static ClampAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }
  bool operator==(const ClampAttrs&) const = default;
};

}  // namespace kiln
