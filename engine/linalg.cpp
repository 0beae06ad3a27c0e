#include "kiln/engine/linalg.h"

#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_linalg.h"
#include "kiln/base/error.h"

namespace kiln {

Tensor matmul(Tensor a, Tensor b) { return detail::submit2(OpKind::matmul, std::move(a), std::move(b)); }

Tensor matmul(Tensor a, Tensor b, MatmulOptions options) {
  if (!options.transpose_a && !options.transpose_b) return matmul(std::move(a), std::move(b));
  KILN_CHECK(a.defined() && b.defined(), "matmul", "an operand is undefined");
  KILN_CHECK((!options.transpose_a || a.rank() >= 2) && (!options.transpose_b || b.rank() >= 2), "matmul",
             "a transposed operand needs 2 or more dims, got " + a.shape().str() + (options.transpose_a ? "ᵀ" : "") +
                 " and " + b.shape().str() + (options.transpose_b ? "ᵀ" : ""));
  // One matmul whatever the device: a device that cannot read the operand transposed in place
  // runs a copy first (the executor's decomposition, ops/decompositions.h).
  const MatmulAttrs attrs{.transpose_a = options.transpose_a, .transpose_b = options.transpose_b};
  return detail::submit2(OpKind::matmul, std::move(a), std::move(b), attrs.encode());
}

}  // namespace kiln
