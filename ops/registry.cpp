#include "kiln/ops/registry.h"

#include <string>

namespace kiln {

namespace {
constexpr OpFamily family_of(const char* f) {
  const std::string_view s(f);
  if (s == "creation") return OpFamily::creation;
  if (s == "unary") return OpFamily::unary;
  if (s == "binary") return OpFamily::binary;
  if (s == "ternary") return OpFamily::ternary;
  if (s == "reduce") return OpFamily::reduce;
  if (s == "linalg") return OpFamily::linalg;
  if (s == "layout") return OpFamily::layout;
  if (s == "index") return OpFamily::index;
  if (s == "conv") return OpFamily::conv;
  if (s == "norm") return OpFamily::norm;
  return OpFamily::control;
}
}  // namespace

OpRegistry::OpRegistry() {
#define KILN_OP(n, f)               \
  at(OpKind::n).name = #n;          \
  at(OpKind::n).family = family_of(#f);
#include "kiln/ops/op_list.def"
#undef KILN_OP
  register_creation_ops(*this);
  register_elementwise_ops(*this);
  register_reduce_ops(*this);
  register_linalg_ops(*this);
  register_layout_ops(*this);
  register_index_ops(*this);
  register_conv_ops(*this);
  register_pool_ops(*this);
  register_norm_ops(*this);
}

const OpRegistry& OpRegistry::get() {
  static const OpRegistry registry;
  return registry;
}

void infer_outputs(const OpIr& op, TensorList& out) {
  const OpInfo& info = op_info(op.kind);
  KILN_CHECK(info.shape_rule != nullptr, info.name, "this op has no shape rule");
  info.shape_rule(op, out);
}

TensorList infer_outputs(const OpIr& op) {
  TensorList outputs;
  infer_outputs(op, outputs);
  return outputs;
}

std::string describe(const TensorIr& t) { return std::string(dtype_name(t.dtype)) + t.shape.str(); }

void check_arity(const OpIr& op, std::size_t n) {
  KILN_CHECK(op.inputs.size() == n, op_name(op.kind),
             "expected " + std::to_string(n) + " inputs, got " + std::to_string(op.inputs.size()));
}

}  // namespace kiln
