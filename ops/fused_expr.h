// The fusable-expression form of elementwise ops: a small DAG of elementwise nodes over one
// iteration shape, read from a few input tensors (broadcast to that shape) and written to a
// few outputs. The fusion planner (scheduler/) builds one per fused group; a device turns its
// structure into one kernel and caches it by structure_key(), which leaves out scalar values
// and sizes, so a repeated training step compiles once. Plain data: no device knows it exists
// until it is asked to run it.
//
// A group may also wrap one reduction or matmul (its anchor, FusedAnchor): an elementwise
// prologue computes the reduction's input as the reduction reads it, and the expression's nodes
// become the epilogue applied to the anchor's value before it is stored.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/ops/ir.h"

namespace kiln {

struct FusedOperand {
  enum class Kind : std::uint8_t { input, node, scalar };
  Kind kind = Kind::input;
  std::uint32_t index = 0;  // into FusedExpr::inputs or FusedExpr::nodes; unused for scalar
};

struct FusedNode {
  OpKind kind = OpKind::add;
  DType out = DType::f32;      // dtype of the node's value
  DType compute = DType::f32;  // dtype its operands are cast to before the op
  std::uint8_t arity = 0;
  FusedOperand operands[3];
  OpAttrs attrs;  // scalar operands and op parameters (clamp bounds, cast target)
  Shape shape;    // the node's own shape; broadcasts to FusedExpr::shape
};

struct FusedAnchor;

struct FusedExpr {
  Shape shape;                       // iteration shape: every output has it
  std::vector<TensorIr> inputs;      // read; each broadcasts to `shape`
  std::vector<FusedNode> nodes;      // topological order
  std::vector<std::uint32_t> output_nodes;  // node written to outputs[i]
  std::vector<TensorIr> outputs;
  // The reduction or matmul this expression finishes: empty for a plain elementwise group, at
  // most one. With an anchor, `shape` is the anchor's output shape, inputs[0] is the anchor's
  // value (made by the kernel, never read from memory) and the nodes are its epilogue (there
  // may be none). A vector, because FusedAnchor holds a FusedExpr in turn.
  std::vector<FusedAnchor> anchor;

  const FusedAnchor* anchored() const { return anchor.empty() ? nullptr : &anchor.front(); }

  // Identifies the kernel: ops, dtypes, wiring, which input dims broadcast. Not the scalar
  // values, not the sizes of dims that do not broadcast. Binary bytes (not for printing: logs
  // use describe()).
  std::string structure_key() const;
  // "exp(mul(x0, 0.7)) -> y0" style description for logs.
  std::string describe() const;
};

struct FusedAnchor {
  OpIr op;  // the reduction or matmul as submitted (no completion)
  // At most one: the elementwise expression whose single output is op.inputs[0], computed as
  // the anchor reads it and never stored.
  std::vector<FusedExpr> prologue;
  bool keep_result = false;  // the anchor's value is also written (someone still holds it)

  const FusedExpr* prologue_expr() const { return prologue.empty() ? nullptr : &prologue.front(); }
};

// Ops that may anchor a group, given the dtypes of the message: with a prologue (reductions of
// f32, f16 or bf16 that give their input's dtype: sum, mean, prod, max, min, var, std,
// logsumexp; and softmax, log_softmax along a dim) and with an epilogue (those, matmul of
// two f32 operands or of two of the same 16-bit float, and the CPU's f32 conv).
bool anchors_prologue(const OpIr& op);
bool anchors_epilogue(const OpIr& op);

// Where an expression's buffers sit in KernelArgs. Plain: inputs follow expr.inputs, outputs
// expr.outputs. Anchored:
//   inputs  = expr.inputs[1..] (the epilogue's), then the anchor op's inputs read from memory
//             (all but the prologue's output), then the prologue's inputs;
//   outputs = expr.outputs, then the anchor's value when keep_result.
struct FusedArgLayout {
  std::size_t epilogue = 0;  // first KernelArgs input of the epilogue (expr.inputs[1] when anchored)
  std::size_t operands = 0;  // first anchor operand read from memory
  std::size_t prologue = 0;  // first prologue input
  std::size_t inputs = 0;    // total inputs
  std::size_t result = 0;    // the anchor's value among the outputs (== outputs when not kept)
  std::size_t outputs = 0;   // total outputs
};
FusedArgLayout fused_arg_layout(const FusedExpr& e);
// The entities behind KernelArgs, in that order.
void fused_arg_tensors(const FusedExpr& e, std::vector<TensorIr>& inputs, std::vector<TensorIr>& outputs);

// The node an elementwise op becomes, given the operands its tensor inputs map to (in the order
// of op.inputs): the scalar of a scalar-form binary op is placed on its side. The fusion planner
// and single_op_expr both build nodes with it, so a fused and an unfused op compute alike.
FusedNode fused_node_of(const OpIr& op, std::span<const FusedOperand> tensor_operands);

// The one-node expression of an elementwise op (each distinct input entity is one expression
// input): how a device runs an unfused elementwise op with its fused code generator.
FusedExpr single_op_expr(const OpIr& op);

// The value an operand of `node` reads when that operand is a scalar: attrs.scalar for the
// scalar forms of binary ops, per side.
double fused_scalar_value(const FusedNode& node, int operand);

}  // namespace kiln
