#include "kiln/engine/linalg.h"

#include "kiln/engine/layout.h"
#include "kiln/engine/submit.h"
#include "kiln/base/error.h"

namespace kiln {

Tensor matmul(Tensor a, Tensor b) { return detail::submit2(OpKind::matmul, std::move(a), std::move(b)); }

Tensor matmul(Tensor a, Tensor b, MatmulOptions options) {
  if (!options.transpose_a && !options.transpose_b) return matmul(std::move(a), std::move(b));
  KILN_CHECK(a.defined() && b.defined(), "matmul", "an operand is undefined");
  KILN_CHECK((!options.transpose_a || a.rank() >= 2) && (!options.transpose_b || b.rank() >= 2), "matmul",
             "a transposed operand needs 2 or more dims, got " + a.shape().str() + (options.transpose_a ? "ᵀ" : "") +
                 " and " + b.shape().str() + (options.transpose_b ? "ᵀ" : ""));
  // The CPU's kernel reads either operand transposed (attrs.ints = [transpose_a, transpose_b]);
  // other devices take the transposed copies.
  if (a.device().kind == DeviceKind::cpu && b.device().kind == DeviceKind::cpu) {
    OpAttrs attrs;
    attrs.ints = {options.transpose_a ? 1 : 0, options.transpose_b ? 1 : 0};
    return detail::submit2(OpKind::matmul, std::move(a), std::move(b), std::move(attrs));
  }
  if (options.transpose_a) a = transpose(std::move(a), -2, -1);
  if (options.transpose_b) b = transpose(std::move(b), -2, -1);
  return matmul(std::move(a), std::move(b));
}

}  // namespace kiln
