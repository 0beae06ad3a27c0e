#include "ops/fused_expr.h"

#include "ops/elementwise_rules.h"
#include "ops/registry.h"

namespace kiln {

namespace {

void append_operand(std::string& s, const FusedOperand& o) {
  switch (o.kind) {
    case FusedOperand::Kind::input: s += 'x' + std::to_string(o.index); break;
    case FusedOperand::Kind::node: s += 'n' + std::to_string(o.index); break;
    case FusedOperand::Kind::scalar: s += 's'; break;
  }
}

}  // namespace

// Compact bytes rather than text: the executor builds this on every run of a group to find its
// kernel, so it must cost little more than a copy of the nodes.
std::string FusedExpr::structure_key() const {
  std::string key;
  key.reserve(8 + 4 * inputs.size() + 16 * nodes.size() + 4 * output_nodes.size());
  auto put = [&key](std::uint32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<std::uint32_t>(shape.rank()) | static_cast<std::uint32_t>(inputs.size()) << 8);
  for (const TensorIr& in : inputs) {
    // Which dims broadcast, right-aligned against the iteration shape (rank <= kMaxRank).
    std::uint32_t mask = 0;
    for (int d = 0; d < shape.rank(); ++d) {
      const int id = in.shape.rank() - shape.rank() + d;
      if (id < 0 || (in.shape[id] == 1 && shape[d] != 1)) mask |= 1u << d;
    }
    put(static_cast<std::uint32_t>(in.dtype) | mask << 8);
  }
  for (const FusedNode& n : nodes) {
    std::uint32_t flags = n.arity;
    if (n.kind == OpKind::clamp)  // which bounds exist
      for (std::size_t i = 0; i < 2 && i < n.attrs.ints.size(); ++i) flags |= (n.attrs.ints[i] ? 1u : 0u) << (4 + i);
    put(static_cast<std::uint32_t>(n.kind) | static_cast<std::uint32_t>(n.compute) << 16 |
        static_cast<std::uint32_t>(n.out) << 24);
    put(flags);
    for (int i = 0; i < n.arity; ++i) put(static_cast<std::uint32_t>(n.operands[i].kind) << 30 | n.operands[i].index);
  }
  for (std::uint32_t o : output_nodes) put(o);
  return key;
}

std::string FusedExpr::describe() const {
  std::string s;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const FusedNode& n = nodes[i];
    if (i) s += "; ";
    s += 'n' + std::to_string(i) + '=' + op_name(n.kind) + '(';
    for (int k = 0; k < n.arity; ++k) {
      if (k) s += ", ";
      if (n.operands[k].kind == FusedOperand::Kind::scalar) s += std::to_string(fused_scalar_value(n, k));
      else append_operand(s, n.operands[k]);
    }
    s += ')';
  }
  s += " -> ";
  for (std::size_t i = 0; i < output_nodes.size(); ++i) s += (i ? ", n" : "n") + std::to_string(output_nodes[i]);
  s += ' ' + shape.str();
  return s;
}

FusedNode fused_node_of(const OpIr& op, std::span<const FusedOperand> tensor_operands) {
  FusedNode node;
  node.kind = op.kind;
  node.out = op.outputs[0].dtype;
  node.compute = elementwise_compute_dtype(op);
  node.attrs = op.attrs;
  node.shape = op.outputs[0].shape;
  std::vector<FusedOperand> operands(tensor_operands.begin(), tensor_operands.end());
  if (op_info(op.kind).family == OpFamily::binary && op.inputs.size() == 1) {
    const FusedOperand s{FusedOperand::Kind::scalar, 0};
    if (op.attrs.scalar_side == ScalarSide::Lhs) operands.insert(operands.begin(), s);
    else operands.push_back(s);
  }
  node.arity = static_cast<std::uint8_t>(operands.size());
  for (std::size_t i = 0; i < operands.size() && i < 3; ++i) node.operands[i] = operands[i];
  return node;
}

FusedExpr single_op_expr(const OpIr& op) {
  FusedExpr e;
  e.shape = op.outputs[0].shape;
  std::vector<FusedOperand> operands;
  for (const TensorIr& t : op.inputs) {
    std::uint32_t index = 0;
    while (index < e.inputs.size() && e.inputs[index].id != t.id) ++index;
    if (index == e.inputs.size()) {
      TensorIr in = t;
      in.status = TensorStatus::ReadOnly;
      e.inputs.push_back(in);
    }
    operands.push_back(FusedOperand{FusedOperand::Kind::input, index});
  }
  e.nodes.push_back(fused_node_of(op, operands));
  e.output_nodes.push_back(0);
  TensorIr out = op.outputs[0];
  out.status = TensorStatus::NotInit;
  e.outputs.push_back(out);
  return e;
}

double fused_scalar_value(const FusedNode& node, int) { return node.attrs.scalar; }

}  // namespace kiln
