// Shape rules of the elementwise family (unary, binary, where, clamp, cast). Shapes broadcast
// NumPy-style; dtypes follow ops/elementwise_rules.h. Everything PyTorch rejects for a dtype
// (abs of bool, bool subtraction, ...) is rejected here, on the caller's thread. Every dtype is
// accepted: f16 and bf16 exist on some Vulkan devices only, and the submission rejects them on
// the others (engine/submit.cpp), naming the device.
#include <cmath>

#include "kiln/ops/attrs_elementwise.h"
#include "kiln/ops/elementwise_rules.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// Computing these in the given dtype is not defined (PyTorch rejects them as well).
void check_compute_dtype(const OpIr& op, DType compute) {
  const char* name = op_name(op.kind);
  // Built only for a message: this runs on every submission.
  auto what = [&op] {
    return op.inputs.size() == 1 ? "input " + describe(op.inputs[0])
                                 : "inputs " + describe(op.inputs[0]) + " and " + describe(op.inputs[1]);
  };
  switch (op.kind) {
    case OpKind::neg:
      KILN_CHECK(compute != DType::bool_, name,
                 "negation of a bool tensor is not supported (" + what() + "); use logical_not");
      break;
    case OpKind::abs:
    case OpKind::relu:
    case OpKind::floor:
    case OpKind::ceil:
    case OpKind::round:
      KILN_CHECK(compute != DType::bool_, name, "bool tensors are not supported (" + what() + ")");
      break;
    case OpKind::sub: {
      bool any_bool = false;
      for (const TensorIr& t : op.inputs) any_bool |= t.dtype == DType::bool_;
      KILN_CHECK(!any_bool, name, "subtraction with a bool tensor is not supported (" + what() + "); use logical_xor");
      break;
    }
    case OpKind::pow:
    case OpKind::remainder:
      KILN_CHECK(compute != DType::bool_, name, "two bool operands are not supported (" + what() + ")");
      break;
    default: break;
  }
  if (op.kind == OpKind::pow && compute == DType::i64 && op.attrs.scalar_side == ScalarSide::Rhs)
    KILN_CHECK(op.attrs.scalar >= 0, name,
               "integers to negative integer powers are not allowed (" + what() + ", exponent " +
                   std::to_string(static_cast<std::int64_t>(op.attrs.scalar)) + ")");
}

TensorIr result(const OpIr& op, const Shape& shape) {
  const DType compute = elementwise_compute_dtype(op);
  check_compute_dtype(op, compute);
  return TensorIr{0, shape, elementwise_output_dtype(op.kind, compute), TensorStatus::NotInit};
}

void unary_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  out.push_back(result(op, op.inputs[0].shape));
}

void cast_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  out.push_back(result(op, op.inputs[0].shape));
}

void clamp_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const ClampAttrs c = ClampAttrs::decode(op);  // ops/attrs_elementwise.h
  KILN_CHECK(c.has_min || c.has_max, "clamp",
             "at least one of min and max must be given (input " + describe(op.inputs[0]) + ")");
  out.push_back(result(op, op.inputs[0].shape));
}

void binary_rule(const OpIr& op, TensorList& out) {
  const bool scalar_form = op.attrs.scalar_side != ScalarSide::None;
  check_arity(op, scalar_form ? 1 : 2);
  const Shape shape =
      scalar_form ? op.inputs[0].shape : broadcast_shapes(op_name(op.kind), op.inputs[0].shape, op.inputs[1].shape);
  out.push_back(result(op, shape));
}

void where_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 3);
  KILN_CHECK(op.inputs[0].dtype == DType::bool_, "where",
             "the condition must be a bool tensor, got " + describe(op.inputs[0]) + " (compare it, e.g. ne(cond, 0))");
  const Shape ca = broadcast_shapes("where", op.inputs[0].shape, op.inputs[1].shape);
  out.push_back(result(op, broadcast_shapes("where", ca, op.inputs[2].shape)));
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  // Every elementwise kernel reads a tile of each input before it writes that tile of the
  // output (devices/cpu/elementwise_driver.h), so any same-shape, same-dtype input may donate
  // its buffer.
  for (std::size_t i = 0; i < kOpCount; ++i) {
    const auto kind = static_cast<OpKind>(i);
    OpInfo& info = r.at(kind);
    if (info.family == OpFamily::unary)
      info.shape_rule = unary_rule;
    else if (info.family == OpFamily::binary)
      info.shape_rule = binary_rule;
    else
      continue;
    info.inplace_ok = true;
  }
  r.at(OpKind::cast).shape_rule = cast_rule;
  r.at(OpKind::clamp).shape_rule = clamp_rule;
  r.at(OpKind::where).shape_rule = where_rule;
  r.at(OpKind::clamp).inplace_ok = true;
  r.at(OpKind::where).inplace_ok = true;
}

}  // namespace kiln
