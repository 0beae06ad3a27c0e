#include "kiln/ops/fused_expr.h"

#include "kiln/ops/attrs_elementwise.h"
#include "kiln/ops/elementwise_rules.h"
#include "kiln/ops/registry.h"

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
    if (n.kind == OpKind::clamp) {  // which bounds exist (their values are arguments)
      const ClampAttrs c = ClampAttrs::decode(n.kind, n.attrs);
      flags |= (c.has_min ? 1u : 0u) << 4 | (c.has_max ? 1u : 0u) << 5;
    }
    put(static_cast<std::uint32_t>(n.kind) | static_cast<std::uint32_t>(n.compute) << 16 |
        static_cast<std::uint32_t>(n.out) << 24);
    put(flags);
    for (int i = 0; i < n.arity; ++i) put(static_cast<std::uint32_t>(n.operands[i].kind) << 30 | n.operands[i].index);
  }
  for (std::uint32_t o : output_nodes) put(o);
  if (const FusedAnchor* a = anchored()) {
    // The anchor: its op, its attributes that shape the kernel (reduced dims, keepdim), and
    // per input its dtype, rank and which dims are 1 (a matmul's broadcast batch).
    const OpIr& op = a->op;
    put(0xA0000000u | static_cast<std::uint32_t>(op.kind) | (a->keep_result ? 1u << 16 : 0u) |
        (op.attrs.keepdim ? 1u << 17 : 0u));
    put(static_cast<std::uint32_t>(op.attrs.dim));  // softmax's
    put(static_cast<std::uint32_t>(op.attrs.ints.size()));
    for (std::int64_t d : op.attrs.ints) put(static_cast<std::uint32_t>(d));
    for (const TensorIr& t : op.inputs) {
      std::uint32_t ones = 0;
      for (int d = 0; d < t.shape.rank(); ++d) ones |= (t.shape[d] == 1 ? 1u : 0u) << d;
      put(static_cast<std::uint32_t>(t.dtype) | static_cast<std::uint32_t>(t.shape.rank()) << 8 | ones << 16);
    }
    if (const FusedExpr* p = a->prologue_expr()) {
      const std::string inner = p->structure_key();
      put(static_cast<std::uint32_t>(inner.size()));
      key += inner;
    }
  }
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
  if (const FusedAnchor* a = anchored()) {
    // Appended piece by piece (GCC 12 warns wrongly about concatenated temporaries).
    std::string head = op_name(a->op.kind);
    if (a->prologue.empty()) {
      head += "(x)";
    } else {
      head += "([";
      head += a->prologue.front().describe();
      head += "])";
    }
    head += " -> x0";
    if (a->keep_result) head += " (kept)";
    if (!nodes.empty()) {
      head += "; epilogue: ";
      head += s;
    }
    s = std::move(head);
  }
  return s;
}

bool anchors_prologue(const OpIr& op) {
  switch (op.kind) {
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::prod:
    case OpKind::max:
    case OpKind::min:
    case OpKind::var:
    case OpKind::std:
    case OpKind::logsumexp:
    case OpKind::softmax:
    case OpKind::log_softmax:
      // f32, or 16-bit floats (accumulated in f32, the result in their dtype).
      return op.inputs.size() == 1 && (op.inputs[0].dtype == DType::f32 || is_half(op.inputs[0].dtype)) &&
             op.outputs.size() == 1 && op.outputs[0].dtype == op.inputs[0].dtype;
    default:
      return false;
  }
}

bool anchors_epilogue(const OpIr& op) {
  if (op.kind == OpKind::matmul) {
    // Two f32 operands, or two of the same 16-bit float (accumulated in f32, C in their dtype).
    if (op.inputs.size() != 2 || op.outputs.size() != 1) return false;
    const DType t = op.inputs[0].dtype;
    return (t == DType::f32 || is_half(t)) && op.inputs[1].dtype == t && op.outputs[0].dtype == t;
  }
  if (op.kind == OpKind::conv) {
    // The CPU's convolution (the only device with a conv kernel) of f32 tensors: the bias is
    // inside it; an activation after it is its epilogue.
    for (const TensorIr& t : op.inputs)
      if (t.dtype != DType::f32) return false;
    return op.outputs.size() == 1 && op.outputs[0].dtype == DType::f32;
  }
  return anchors_prologue(op);
}

FusedArgLayout fused_arg_layout(const FusedExpr& e) {
  FusedArgLayout l;
  const FusedAnchor* a = e.anchored();
  if (!a) {
    l.operands = l.prologue = l.inputs = e.inputs.size();
    l.result = l.outputs = e.outputs.size();
    return l;
  }
  l.operands = e.inputs.size() - 1;
  l.prologue = l.operands + a->op.inputs.size() - (a->prologue.empty() ? 0 : 1);
  l.inputs = l.prologue + (a->prologue.empty() ? 0 : a->prologue.front().inputs.size());
  l.result = e.outputs.size();
  l.outputs = l.result + (a->keep_result ? 1 : 0);
  return l;
}

void fused_arg_tensors(const FusedExpr& e, std::vector<TensorIr>& inputs, std::vector<TensorIr>& outputs) {
  inputs.clear();
  outputs.assign(e.outputs.begin(), e.outputs.end());
  const FusedAnchor* a = e.anchored();
  if (!a) {
    inputs.assign(e.inputs.begin(), e.inputs.end());
    return;
  }
  inputs.assign(e.inputs.begin() + 1, e.inputs.end());
  const FusedExpr* p = a->prologue_expr();
  inputs.insert(inputs.end(), a->op.inputs.begin() + (p ? 1 : 0), a->op.inputs.end());
  if (p) inputs.insert(inputs.end(), p->inputs.begin(), p->inputs.end());
  if (a->keep_result) outputs.push_back(a->op.outputs[0]);
}

FusedNode fused_node_of(const OpIr& op, std::span<const FusedOperand> tensor_operands) {
  FusedNode node;
  node.kind = op.kind;
  node.out = op.outputs[0].dtype;
  node.compute = elementwise_compute_dtype(op);
  node.attrs = op.attrs;
  node.shape = op.outputs[0].shape;
  // Fusable ops have at most 3 operands, a scalar included; placed in place (no heap: this
  // runs for every op of every flush).
  const bool scalar = op_info(op.kind).family == OpFamily::binary && op.inputs.size() == 1;
  KILN_CHECK(tensor_operands.size() + (scalar ? 1 : 0) <= 3, op_name(op.kind), "internal error: too many fused operands");
  const FusedOperand s{FusedOperand::Kind::scalar, 0};
  std::size_t n = 0;
  if (scalar && op.attrs.scalar_side == ScalarSide::Lhs) node.operands[n++] = s;
  for (const FusedOperand& o : tensor_operands) node.operands[n++] = o;
  if (scalar && op.attrs.scalar_side != ScalarSide::Lhs) node.operands[n++] = s;
  node.arity = static_cast<std::uint8_t>(n);
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
