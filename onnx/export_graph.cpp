// ExportGraph (onnx/export_graph.h): names, nodes, constants; and the dispatch of one recorded op
// to the family that writes it.
#include "kiln/onnx/export_graph.h"

#include <onnx/onnx_pb.h>

#include <cstring>

#include "kiln/ops/elementwise_rules.h"
#include "kiln/ops/registry.h"

namespace kiln::onnx::detail {

int onnx_elem_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ::onnx::TensorProto::FLOAT;
    case DType::i64: return ::onnx::TensorProto::INT64;
    case DType::bool_: return ::onnx::TensorProto::BOOL;
    case DType::f16: return ::onnx::TensorProto::FLOAT16;
    case DType::bf16: return ::onnx::TensorProto::BFLOAT16;
  }
  return ::onnx::TensorProto::UNDEFINED;
}

std::string ExportGraph::name(EntityId id) const {
  const auto it = names_.find(id);
  return it != names_.end() ? it->second : "v" + std::to_string(id);
}

std::string ExportGraph::fresh(const std::string& hint) { return hint + "_" + std::to_string(next_++); }

::onnx::NodeProto& ExportGraph::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                     const std::vector<std::string>& outputs) {
  ::onnx::NodeProto& n = *graph_.add_node();
  n.set_op_type(op_type);
  n.set_name(op_type + "_" + std::to_string(graph_.node_size() - 1));
  for (const std::string& i : inputs) n.add_input(i);
  for (const std::string& o : outputs) n.add_output(o);
  return n;
}

namespace {

void fill_tensor(::onnx::TensorProto& t, const std::string& name, DType dtype, const Shape& shape, const void* data,
                 std::size_t bytes) {
  t.set_name(name);
  t.set_data_type(onnx_elem_type(dtype));
  for (std::int64_t d : shape) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
}

}  // namespace

void ExportGraph::initializer(const std::string& name, DType dtype, const Shape& shape, const void* data,
                              std::size_t bytes) {
  fill_tensor(*graph_.add_initializer(), name, dtype, shape, data, bytes);
}

void ExportGraph::constant(const std::string& name, DType dtype, const Shape& shape, const void* data,
                           std::size_t bytes) {
  ::onnx::AttributeProto& a = *node("Constant", {}, {name}).add_attribute();
  a.set_name("value");
  a.set_type(::onnx::AttributeProto::TENSOR);
  fill_tensor(*a.mutable_t(), name, dtype, shape, data, bytes);
}

std::string ExportGraph::ints(const std::vector<std::int64_t>& values) {
  const std::string n = fresh("ints");
  constant(n, DType::i64, Shape{static_cast<std::int64_t>(values.size())}, values.data(),
           values.size() * sizeof(std::int64_t));
  return n;
}

std::string ExportGraph::scalar(double value, DType dtype) {
  const std::string n = fresh("scalar");
  switch (dtype) {
    case DType::f32: {
      const auto v = static_cast<float>(value);  // rounded as kiln rounds a scalar operand of an f32 op
      constant(n, dtype, Shape{}, &v, sizeof v);
      break;
    }
    case DType::i64: {
      const auto v = static_cast<std::int64_t>(value);
      constant(n, dtype, Shape{}, &v, sizeof v);
      break;
    }
    case DType::bool_: {
      const std::uint8_t v = value != 0.0 ? 1 : 0;
      constant(n, dtype, Shape{}, &v, sizeof v);
      break;
    }
    default:
      // f16 and bf16 scalars: written as f32 and cast, so that the rounding is the runtime's.
      return cast(scalar(value, DType::f32), DType::f32, dtype);
  }
  return n;
}

std::string ExportGraph::cast(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  const std::string y = fresh("cast");
  set_attr(node("Cast", {x}, {y}), "to", static_cast<std::int64_t>(onnx_elem_type(to)));
  return y;
}

void set_attr(::onnx::NodeProto& n, const std::string& name, std::int64_t value) {
  ::onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::INT);
  a.set_i(value);
}

void set_attr(::onnx::NodeProto& n, const std::string& name, float value) {
  ::onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::FLOAT);
  a.set_f(value);
}

void set_attr(::onnx::NodeProto& n, const std::string& name, const std::string& value) {
  ::onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::STRING);
  a.set_s(value);
}

void set_attr(::onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& values) {
  ::onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a.add_ints(v);
}

std::string describe_node(const RecordedGraph::Node& n) {
  std::string s = n.name();
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    s += (i == 0 ? " " : ", ") + std::string(dtype_name(n.inputs[i].dtype)) + n.inputs[i].shape.str();
  if (n.inputs.empty() && !n.outputs.empty())
    s += " -> " + std::string(dtype_name(n.outputs[0].dtype)) + n.outputs[0].shape.str();
  return s;
}

void export_node(ExportGraph& g, const RecordedGraph::Node& n, const std::set<EntityId>& used) {
  bool batched = false;
  for (const RecordedGraph::Value& v : n.inputs) batched = batched || g.batched(v.id);
  // The families check what they cannot keep dynamic (a permute moving dim 0...); an elementwise
  // op broadcasting a batched value into more dims would move its batch off dim 0.
  if (batched && is_elementwise(n.kind))
    for (const RecordedGraph::Value& v : n.inputs)
      KILN_CHECK(!g.batched(v.id) || n.outputs.empty() || v.shape.rank() == n.outputs[0].shape.rank(), "onnx export",
                 describe_node(n) +
                     ": broadcasting a batched input into more dims moves the batch off dim 0; "
                     "export with a fixed batch (dynamic_batch = false)");
  const bool written =
      export_elementwise(g, n) || export_reduce(g, n) || export_layout(g, n) || export_window(g, n, used);
  if (!written)
    throw Error("onnx export", describe_node(n) + ": op '" + n.name() + "' has no ONNX equivalent that export writes");
  if (batched)
    for (const RecordedGraph::Value& v : n.outputs) g.set_batched(v.id);
}

}  // namespace kiln::onnx::detail
