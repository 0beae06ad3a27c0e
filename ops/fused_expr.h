// The fusable-expression form of elementwise ops: a small DAG of elementwise nodes over one
// iteration shape, read from a few input tensors (broadcast to that shape) and written to a
// few outputs. The fusion planner (scheduler/) builds one per fused group; a device turns its
// structure into one kernel and caches it by structure_key(), which leaves out scalar values
// and sizes, so a repeated training step compiles once. Plain data: no device knows it exists
// until it is asked to run it.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ops/ir.h"

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

struct FusedExpr {
  Shape shape;                       // iteration shape: every output has it
  std::vector<TensorIr> inputs;      // read; each broadcasts to `shape`
  std::vector<FusedNode> nodes;      // topological order
  std::vector<std::uint32_t> output_nodes;  // node written to outputs[i]
  std::vector<TensorIr> outputs;

  // Identifies the kernel: ops, dtypes, wiring, which input dims broadcast. Not the scalar
  // values, not the sizes of dims that do not broadcast. Binary bytes (not for printing: logs
  // use describe()).
  std::string structure_key() const;
  // "exp(mul(x0, 0.7)) -> y0" style description for logs.
  std::string describe() const;
};

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
