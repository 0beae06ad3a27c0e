// A read-only view of a recording (engine/recorded_function.h) as a graph, for code that turns a
// recorded pass into another format (onnx/export.h writes it as an ONNX file): the ops in the
// order they were submitted, each with its kind, attributes and the values it reads and writes,
// plus which values are the inputs, the outputs and the tensors from outside (the weights, whose
// values stay readable through their handles). The recording holds ops as submitted, before the
// fusion planner groups them at the first replay, so every node is one primitive op.
//
//   RecordedGraph g = pass.graph();
//   for (const RecordedGraph::Node& n : g.nodes) std::cout << n.name() << "\n";
//
// Drops (a value's last handle gone) carry nothing a graph needs and are left out.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "kiln/engine/tensor.h"
#include "kiln/ops/ir.h"

namespace kiln {

struct RecordedGraph {
  struct Value {
    EntityId id = 0;
    Shape shape;
    DType dtype = DType::f32;
  };
  struct Node {
    OpKind kind = OpKind::sync;
    // As submitted: decode them with the op's typed attributes (ops/attrs_*.h) where it has them.
    OpAttrs attrs;
    std::vector<Value> inputs, outputs;
    // upload: the bytes of outputs[0] (a constant the recorded function made from host data).
    std::shared_ptr<const std::byte> host_data;
    const char* name() const;  // "matmul"
  };

  std::vector<Node> nodes;
  std::vector<Value> inputs;       // the recording's inputs, in order
  std::vector<Value> host_inputs;  // values each call brings as bytes (RecordedFunction::Recording::host_input)
  std::vector<Value> outputs;      // in order (a value may come twice)
  // Tensors from outside the recording that its ops read (weights), readable with to_vector().
  // Their ids are the ids nodes name as inputs.
  std::vector<Tensor> outside;
  // Random ops whose seeds each call draws again (RedrawnSeeds), by their output id.
  std::vector<EntityId> reseeded;
};

}  // namespace kiln
