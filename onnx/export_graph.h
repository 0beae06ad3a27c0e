// The GraphProto that export (onnx/export.h) fills, behind a small interface: value names for
// kiln's entities, nodes, constants and initializers, and which values carry the dynamic batch.
// export_ops*.cpp turn one recorded op into nodes through it; nothing else touches protobuf there.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/engine/recorded_graph.h"

namespace onnx {
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace kiln::onnx::detail {

// ONNX's elem_type for a kiln dtype.
int onnx_elem_type(DType dtype);

class ExportGraph {
 public:
  ExportGraph(::onnx::GraphProto& graph, bool dynamic_batch) : graph_(graph), dynamic_batch_(dynamic_batch) {}

  // The ONNX name of an entity: bound (inputs, outputs, weights) or "v<id>".
  std::string name(EntityId id) const;
  void bind(EntityId id, const std::string& name) { names_[id] = name; }
  // A new name for an intermediate value of a node's expansion.
  std::string fresh(const std::string& hint);

  // A node; its attributes are set on the result.
  ::onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);
  // Constants (Constant nodes: an importer takes initializers for weights, these are not): an
  // i64 list (shape operands, axes), a 0-d number of `dtype`, or any value as raw bytes.
  std::string ints(const std::vector<std::int64_t>& values);
  std::string scalar(double value, DType dtype);
  void constant(const std::string& name, DType dtype, const Shape& shape, const void* data, std::size_t bytes);
  // A weight: an initializer of raw little-endian bytes.
  void initializer(const std::string& name, DType dtype, const Shape& shape, const void* data, std::size_t bytes);

  // x as `to` (a Cast node) or x itself when it already is.
  std::string cast(const std::string& x, DType from, DType to);

  // Dynamic batch: whether dim 0 of the value is the graph input's symbolic batch.
  bool dynamic_batch() const { return dynamic_batch_; }
  bool batched(EntityId id) const { return batched_.count(id) != 0; }
  void set_batched(EntityId id) { batched_.insert(id); }

 private:
  ::onnx::GraphProto& graph_;
  bool dynamic_batch_;
  std::map<EntityId, std::string> names_;
  std::set<EntityId> batched_;
  std::int64_t next_ = 0;
};

// Attributes of a node.
void set_attr(::onnx::NodeProto& n, const std::string& name, std::int64_t value);
void set_attr(::onnx::NodeProto& n, const std::string& name, float value);
void set_attr(::onnx::NodeProto& n, const std::string& name, const std::string& value);
void set_attr(::onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& values);

// "matmul f32[2, 3], f32[3, 4]": how export's errors name a recorded op.
std::string describe_node(const RecordedGraph::Node& n);

// Writes the ONNX nodes of one recorded op; kiln::Error for an op with no ONNX equivalent.
// `used` holds the ids some later node or the graph's outputs read (an op's unused second
// output, max pooling's indices, need not be written).
void export_node(ExportGraph& g, const RecordedGraph::Node& n, const std::set<EntityId>& used);
// The families (export_ops_elementwise.cpp, export_ops_tensor.cpp); false when `n` is not theirs.
bool export_elementwise(ExportGraph& g, const RecordedGraph::Node& n);
bool export_reduce(ExportGraph& g, const RecordedGraph::Node& n);
bool export_layout(ExportGraph& g, const RecordedGraph::Node& n);
bool export_window(ExportGraph& g, const RecordedGraph::Node& n, const std::set<EntityId>& used);

}  // namespace kiln::onnx::detail
