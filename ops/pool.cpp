// Shape rules of the pooling ops max_pool, avg_pool, max_pool_grad and avg_pool_grad
// (engine/pool.h, autograd's pool rules). Their attrs are PoolAttrs (ops/attrs_window.h), whose
// decoder checks the form; the rules check them against the operands, so a message that reaches
// a kernel always describes at least one window per dim. The engine has checked the same things
// with the user's words already; these messages are for messages built elsewhere.
#include <string>

#include "kiln/ops/attrs_window.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// The attrs of a pooling op whose first operand is [N, C, *spatial], checked against it.
PoolAttrs checked_attrs(const OpIr& op) {
  const char* name = op_name(op.kind);
  KILN_CHECK(!op.inputs.empty(), name, "expected inputs");
  const PoolAttrs a = PoolAttrs::decode(op);
  const TensorIr& first = op.inputs[0];
  KILN_CHECK(first.shape.rank() == a.dims + 2, name,
             "expected [N, C, *spatial] with " + std::to_string(a.dims) + " spatial dim" + (a.dims > 1 ? "s" : "") +
                 " (the attrs'), got " + describe(first));
  KILN_CHECK(is_floating(first.dtype), name, "expected a floating-point operand, got " + describe(first));
  return a;
}

// [N, C, *out] for an input [N, C, *in]; throws naming the op when a dim has no window.
template <class What>
Shape pooled_shape(const char* name, const PoolAttrs& a, std::int64_t n, std::int64_t c, const std::int64_t* in,
                   const What& what) {
  Shape out{n, c};
  for (int d = 0; d < a.dims; ++d) {
    const std::int64_t o = a.output_size(d, in[d]);
    KILN_CHECK(o >= 1, name,
               "the window (" + a.str() + ") is larger than the padded " + what() + " in spatial dim " +
                   std::to_string(d) + ": the output would be too small");
    out.push_back(o);
  }
  return out;
}

// max_pool: x -> values (, indices i64).
void max_pool_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const PoolAttrs a = checked_attrs(op);
  const TensorIr& x = op.inputs[0];
  const Shape shape =
      pooled_shape("max_pool", a, x.shape[0], x.shape[1], x.shape.begin() + 2, [&] { return "input " + describe(x); });
  out.push_back(TensorIr{0, shape, x.dtype, TensorStatus::NotInit});
  if (a.with_indices) out.push_back(TensorIr{0, shape, DType::i64, TensorStatus::NotInit});
}

void avg_pool_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const PoolAttrs a = checked_attrs(op);
  const TensorIr& x = op.inputs[0];
  out.push_back(TensorIr{
      0,
      pooled_shape("avg_pool", a, x.shape[0], x.shape[1], x.shape.begin() + 2, [&] { return "input " + describe(x); }),
      x.dtype, TensorStatus::NotInit});
}

// The gradients: dy [N, C, *out] (and max_pool_grad's indices of its shape) -> dx [N, C, *input_size].
void pool_grad_rule(const OpIr& op, TensorList& out) {
  const bool max = op.kind == OpKind::max_pool_grad;
  const char* name = op_name(op.kind);
  check_arity(op, max ? 2 : 1);
  const PoolAttrs a = checked_attrs(op);
  const TensorIr& dy = op.inputs[0];
  const Shape want = pooled_shape(name, a, dy.shape[0], dy.shape[1], a.input_size.data(),
                                  [&] { return "input " + spatial_str(a.input_size, a.dims); });
  KILN_CHECK(dy.shape == want, name,
             "dy " + describe(dy) + " does not hold the windows " + want.str() + " of an input " +
                 spatial_str(a.input_size, a.dims) + " (" + a.str() + ")");
  KILN_CHECK(!max || (op.inputs[1].dtype == DType::i64 && op.inputs[1].shape == dy.shape), name,
             "expected indices i64 of dy's shape, got dy " + describe(dy) + ", indices " + describe(op.inputs[1]));
  Shape shape{dy.shape[0], dy.shape[1]};
  for (int d = 0; d < a.dims; ++d) shape.push_back(a.input_size[d]);
  out.push_back(TensorIr{0, shape, dy.dtype, TensorStatus::NotInit});
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  // Windows read other positions than they write: never in place.
  r.at(OpKind::max_pool).shape_rule = max_pool_rule;
  r.at(OpKind::avg_pool).shape_rule = avg_pool_rule;
  r.at(OpKind::max_pool_grad).shape_rule = pool_grad_rule;
  r.at(OpKind::avg_pool_grad).shape_rule = pool_grad_rule;
}

}  // namespace kiln
