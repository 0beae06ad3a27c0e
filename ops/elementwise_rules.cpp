#include "kiln/ops/elementwise_rules.h"

#include <cmath>

#include "kiln/ops/attrs_elementwise.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// PyTorch's order: bool < i64 < the 16-bit floats < f32. f16 and bf16 share a rank: next to
// each other they promote to f32 (promote_types).
int rank_of(DType t) {
  switch (t) {
    case DType::bool_: return 0;
    case DType::i64: return 1;
    case DType::f16:
    case DType::bf16: return 2;
    default: return 3;  // f32
  }
}

// Ops whose result is real-valued whatever their input: they compute in f32.
bool is_float_math(OpKind k) {
  switch (k) {
    case OpKind::exp:
    case OpKind::log:
    case OpKind::log1p:
    case OpKind::expm1:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::reciprocal:
    case OpKind::sin:
    case OpKind::cos:
    case OpKind::tan:
    case OpKind::tanh:
    case OpKind::sigmoid:
    case OpKind::erf:
    case OpKind::gelu:
    case OpKind::silu:
    case OpKind::softplus:
    case OpKind::div:
    case OpKind::atan2: return true;
    default: return false;
  }
}

bool is_logical(OpKind k) {
  return k == OpKind::logical_and || k == OpKind::logical_or || k == OpKind::logical_xor || k == OpKind::logical_not;
}

bool gives_bool(OpKind k) {
  switch (k) {
    case OpKind::eq:
    case OpKind::ne:
    case OpKind::lt:
    case OpKind::le:
    case OpKind::gt:
    case OpKind::ge:
    case OpKind::isnan:
    case OpKind::isinf: return true;
    default: return is_logical(k);
  }
}

}  // namespace

bool is_elementwise(OpKind kind) {
  const OpFamily f = op_info(kind).family;
  return f == OpFamily::unary || f == OpFamily::binary || f == OpFamily::ternary;
}

DType promote_types(DType a, DType b) {
  if (a != b && is_half(a) && is_half(b)) return DType::f32;  // torch.promote_types(f16, bf16)
  return rank_of(a) >= rank_of(b) ? a : b;
}

bool is_whole_scalar(double value) {
  // 2^63 itself does not fit, hence the strict bound.
  return std::isfinite(value) && std::trunc(value) == value && std::fabs(value) < 9223372036854775808.0;
}

DType scalar_operand_dtype(DType tensor, double value) {
  // A scalar never lifts a floating tensor out of its dtype (x16 * 0.1 stays f16).
  if (is_half(tensor)) return tensor;
  if (tensor == DType::f32 || !is_whole_scalar(value)) return DType::f32;
  return DType::i64;
}

namespace {

// The dtype the value operands promote to (before the op's own rule).
DType promoted(OpKind kind, std::span<const DType> inputs, const OpAttrs& attrs) {
  if (op_info(kind).family == OpFamily::binary && attrs.scalar_side != ScalarSide::None)
    return promote_types(inputs[0], scalar_operand_dtype(inputs[0], attrs.scalar));
  DType t = inputs[0];
  for (std::size_t i = 1; i < inputs.size(); ++i) t = promote_types(t, inputs[i]);
  return t;
}

}  // namespace

DType elementwise_compute_dtype(OpKind kind, std::span<const DType> inputs, const OpAttrs& attrs) {
  // Real-valued math keeps a floating dtype (exp of f16 is f16) and lifts the others to f32.
  if (is_float_math(kind)) {
    const DType t = promoted(kind, inputs, attrs);
    return is_floating(t) ? t : DType::f32;
  }
  if (is_logical(kind)) return DType::bool_;
  switch (kind) {
    case OpKind::cast: return attrs.dtype;
    case OpKind::square: return inputs[0] == DType::bool_ ? DType::i64 : inputs[0];
    case OpKind::clamp: {
      DType t = inputs[0];
      const ClampAttrs c = ClampAttrs::decode(kind, attrs);
      if (c.has_min) t = promote_types(t, scalar_operand_dtype(inputs[0], c.min));
      if (c.has_max) t = promote_types(t, scalar_operand_dtype(inputs[0], c.max));
      return t;
    }
    case OpKind::where: return promote_types(inputs[1], inputs[2]);
    default: break;
  }
  if (op_info(kind).family == OpFamily::binary) return promoted(kind, inputs, attrs);
  return inputs[0];  // neg abs relu floor ceil round sign isnan isinf: computed as they are
}

DType elementwise_compute_dtype(const OpIr& op) {
  DType dtypes[3] = {};
  const std::size_t n = op.inputs.size() < 3 ? op.inputs.size() : 3;
  for (std::size_t i = 0; i < n; ++i) dtypes[i] = op.inputs[i].dtype;
  // PyTorch's rule for 0-d tensors: next to tensors with dims, they lift the dtype only into a
  // higher category (a 0-d f32 lifts an i64 tensor to f32, but an f16 tensor stays f16); in
  // the same category the dimensioned operands decide. Where takes its values from inputs 1, 2.
  const std::size_t first = op.kind == OpKind::where ? 1 : 0;
  bool has_dims = false, has_zero_d = false;
  DType dims = DType::bool_, zero_d = DType::bool_;
  for (std::size_t i = first; i < n; ++i) {
    const bool zero = op.inputs[i].shape.rank() == 0;
    DType& t = zero ? zero_d : dims;
    bool& seen = zero ? has_zero_d : has_dims;
    t = seen ? promote_types(t, dtypes[i]) : dtypes[i];
    seen = true;
  }
  const bool lifts = dims == DType::bool_ || (!is_floating(dims) && is_floating(zero_d));
  if (has_dims && has_zero_d && !lifts)
    for (std::size_t i = first; i < n; ++i)
      if (op.inputs[i].shape.rank() == 0) dtypes[i] = dims;  // computed as the dimensioned dtype
  return elementwise_compute_dtype(op.kind, std::span<const DType>(dtypes, n), op.attrs);
}

DType elementwise_operand_dtype(OpKind kind, std::size_t index, DType compute) {
  return kind == OpKind::where && index == 0 ? DType::bool_ : compute;
}

DType elementwise_output_dtype(OpKind kind, DType compute) { return gives_bool(kind) ? DType::bool_ : compute; }

}  // namespace kiln
