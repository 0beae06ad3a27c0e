// Backward rule of matmul, with torch.matmul's rules. A 1-D operand is promoted to a matrix
// (a leading 1 for the left, a trailing 1 for the right), so the gradient of the output is first
// given back the dims the forward removed; then dA = dC·Bᵀ and dB = Aᵀ·dC, each summed over the
// batch dims its operand was broadcast along and reshaped to the operand's own shape. An
// operand that entered transposed (MatmulOptions) gets its gradient from transposed reads too.
#include "kiln/autograd/rules.h"
#include "kiln/ops/attrs_linalg.h"

namespace kiln::autograd {

namespace {

Shape promoted_left(const Shape& a) { return a.rank() == 1 ? Shape{1, a[0]} : a; }
Shape promoted_right(const Shape& b) { return b.rank() == 1 ? Shape{b[0], 1} : b; }

std::vector<Tensor> matmul_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined()) return {Tensor{}, Tensor{}};
  const Shape& a_shape = fwd.input_meta[0].shape;
  const Shape& b_shape = fwd.input_meta[1].shape;
  const Shape a2 = promoted_left(a_shape), b2 = promoted_right(b_shape);

  // The output of the promoted product: the result's shape with the removed dims put back.
  Shape c2 = grads_out[0].shape();
  if (a_shape.rank() == 1) c2.insert(c2.rank() - (b_shape.rank() == 1 ? 0 : 1), 1);
  if (b_shape.rank() == 1) c2.push_back(1);
  Tensor g = reshape(grads_out[0], c2.to_vector());

  Tensor a = reshape(fwd.inputs[0], a2.to_vector());
  Tensor b = reshape(fwd.inputs[1], b2.to_vector());
  // C = op(A) op(B), the operands (promoted to 2-D or more) read transposed or not. The
  // gradients of the stored operands come out of products that read their operands transposed
  // in turn, so no transpose is materialized on a device that reads them in place (the CPU):
  //   A as stored: dC op(B)ᵀ, or op(B) dCᵀ when A entered transposed;
  //   B as stored: op(A)ᵀ dC, or dCᵀ op(A) when B entered transposed.
  // An operand that takes no gradient (a model's input) gets no product.
  const MatmulAttrs flags = MatmulAttrs::decode(OpKind::matmul, fwd.attrs);
  const bool ta = flags.transpose_a, tb = flags.transpose_b;
  Tensor ga, gb;
  if (fwd.needs_grad(0)) {
    ga = ta ? matmul(b, g, {.transpose_a = tb, .transpose_b = true}) : matmul(g, b, {.transpose_b = !tb});
    ga = reshape(sum_to(std::move(ga), a2), a_shape.to_vector());
  }
  if (fwd.needs_grad(1)) {
    gb = tb ? matmul(g, a, {.transpose_a = true, .transpose_b = ta}) : matmul(a, g, {.transpose_a = !ta});
    gb = reshape(sum_to(std::move(gb), b2), b_shape.to_vector());
  }
  return {std::move(ga), std::move(gb)};
}

}  // namespace

void register_linalg_rules(RuleTable& t) {
  t.set(OpKind::matmul, BackwardRule{matmul_backward, /*saves_inputs=*/true, /*saves_outputs=*/false});
}

}  // namespace kiln::autograd
