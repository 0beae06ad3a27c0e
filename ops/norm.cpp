// Shape rules of batch normalization in training mode (nn::batch_norm): batch_norm computes
// the batch statistics per channel and normalizes with them in one op, and batch_norm_backward
// is its gradient. A device without kernels for them runs them decomposed into reductions and
// elementwise ops (ops/decompositions.h), which stay their test oracle. eps is attrs.scalar.
#include <string>

#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// x [N, C, *] of a floating dtype; every [C] operand from `first` on of x's dtype and [C].
void check_norm_operands(const OpIr& op, std::size_t first) {
  const char* name = op_name(op.kind);
  const TensorIr& x = op.inputs[first - 1];
  KILN_CHECK(x.shape.rank() >= 2 && is_floating(x.dtype), name,
             "expected a floating input [N, C, *], got " + describe(x));
  const std::int64_t c = x.shape[1];
  for (std::size_t i = first; i < op.inputs.size(); ++i) {
    const TensorIr& t = op.inputs[i];
    KILN_CHECK(t.dtype == x.dtype && t.shape == Shape{c}, name,
               "per-channel operands must be [" + std::to_string(c) + "] of the input's dtype, got input " +
                   describe(x) + " and " + describe(t));
  }
  KILN_CHECK(op.attrs.scalar >= 0.0, name, "eps must not be negative, got " + std::to_string(op.attrs.scalar));
}

// x, weight [C], bias [C] -> y (x's shape), mean [C], var [C] (biased: divided by N * spatial).
void batch_norm_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 3);
  check_norm_operands(op, 1);
  const TensorIr& x = op.inputs[0];
  const Shape c{x.shape[1]};
  out.push_back(TensorIr{0, x.shape, x.dtype, TensorStatus::NotInit});
  out.push_back(TensorIr{0, c, x.dtype, TensorStatus::NotInit});
  out.push_back(TensorIr{0, c, x.dtype, TensorStatus::NotInit});
}

// dy, x, weight -> dx, dweight, dbias.
void batch_norm_backward_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 3);
  const TensorIr &dy = op.inputs[0], &x = op.inputs[1];
  KILN_CHECK(dy.shape == x.shape && dy.dtype == x.dtype, "batch_norm_backward",
             "the output's gradient " + describe(dy) + " must match the input " + describe(x));
  check_norm_operands(op, 2);
  const Shape c{x.shape[1]};
  out.push_back(TensorIr{0, x.shape, x.dtype, TensorStatus::NotInit});
  out.push_back(TensorIr{0, c, x.dtype, TensorStatus::NotInit});
  out.push_back(TensorIr{0, c, x.dtype, TensorStatus::NotInit});
}

}  // namespace

void register_norm_ops(OpRegistry& r) {
  // Each channel is read whole before any of its outputs is written, so an output may take
  // the buffer of a handed-over input of its shape (y that of x, dx that of dy or x, a [C]
  // result that of a [C] operand).
  r.at(OpKind::batch_norm).shape_rule = batch_norm_rule;
  r.at(OpKind::batch_norm).inplace_ok = true;
  r.at(OpKind::batch_norm_backward).shape_rule = batch_norm_backward_rule;
  r.at(OpKind::batch_norm_backward).inplace_ok = true;
}

}  // namespace kiln
