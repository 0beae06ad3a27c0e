// onnx::export_model (onnx/export.h): a recorded pass's graph (engine/recorded_graph.h) as a
// ModelProto of opset 17: the input, the weights as initializers, one or a few nodes per op
// (export_ops_*.cpp), the output.
#include "kiln/onnx/export.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"
#include "kiln/io/atomic_file.h"
#include "kiln/onnx/export_graph.h"

namespace kiln::onnx {

namespace {

constexpr std::int64_t kExportOpset = 17;
constexpr const char* kBatchDim = "batch";

void set_value_info(::onnx::ValueInfoProto& v, const std::string& name, DType dtype, const Shape& shape, bool batched) {
  v.set_name(name);
  ::onnx::TypeProto_Tensor& t = *v.mutable_type()->mutable_tensor_type();
  t.set_elem_type(detail::onnx_elem_type(dtype));
  ::onnx::TensorShapeProto& s = *t.mutable_shape();
  for (int d = 0; d < shape.rank(); ++d) {
    ::onnx::TensorShapeProto_Dimension& dim = *s.add_dim();
    if (d == 0 && batched)
      dim.set_dim_param(kBatchDim);
    else
      dim.set_dim_value(shape[d]);
  }
}

// A weight's bytes, read from its device (it waits for the weight's value).
std::vector<std::byte> weight_bytes(const Tensor& w, const std::string& name) {
  const Tensor t = to(w, Device::cpu());
  std::vector<std::byte> bytes;
  const auto copy = [&](const auto& v) {
    bytes.resize(v.size() * sizeof(v[0]));
    if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  };
  switch (t.dtype()) {
    case DType::f32: copy(t.to_vector<float>().get()); break;
    case DType::i64: copy(t.to_vector<std::int64_t>().get()); break;
    case DType::bool_:
      for (bool b : t.to_vector<bool>().get()) bytes.push_back(std::byte{b ? std::uint8_t{1} : std::uint8_t{0}});
      break;
    default:
      throw Error("onnx export", "weight '" + name + "' is " + dtype_name(t.dtype()) + w.shape().str() +
                                     ": export writes f32, i64 and bool weights (cast the model to f32 first)");
  }
  return bytes;
}

::onnx::ModelProto build(const RecordedGraph& graph, const ExportOptions& options) {
  KILN_CHECK(graph.inputs.size() == 1 && graph.outputs.size() == 1, "onnx export",
             "a pass of one input and one output is exported, this one has " + std::to_string(graph.inputs.size()) +
                 " and " + std::to_string(graph.outputs.size()));
  KILN_CHECK(graph.host_inputs.empty(), "onnx export", "a recording with host inputs is not exported");
  KILN_CHECK(!options.input_name.empty() && !options.output_name.empty() && options.input_name != options.output_name,
             "onnx export", "the input and output need two different, non-empty names");
  ::onnx::ModelProto model;
  model.set_ir_version(8);  // ONNX 1.12's, the version Debian's onnx and ONNX Runtime both read
  model.set_producer_name("kiln");
  ::onnx::OperatorSetIdProto& opset = *model.add_opset_import();
  opset.set_domain("");
  opset.set_version(kExportOpset);
  ::onnx::GraphProto& gp = *model.mutable_graph();
  gp.set_name(options.graph_name);

  detail::ExportGraph g(gp, options.dynamic_batch);
  const RecordedGraph::Value& input = graph.inputs[0];
  const RecordedGraph::Value& output = graph.outputs[0];
  KILN_CHECK(!options.dynamic_batch || input.shape.rank() >= 1, "onnx export",
             "a dynamic batch needs an input with dims, got " + input.shape.str());
  g.bind(input.id, options.input_name);
  g.bind(output.id, options.output_name);
  if (options.dynamic_batch) g.set_batched(input.id);
  set_value_info(*gp.add_input(), options.input_name, input.dtype, input.shape, options.dynamic_batch);

  // Weights: named by the caller's names (a module's state_dict), else const_N.
  std::map<EntityId, std::string> names;
  for (const nn::NamedTensor& nt : options.weight_names)
    if (nt.tensor.defined()) names.emplace(nt.tensor.id(), nt.name);
  std::set<std::string> taken{options.input_name, options.output_name};
  std::size_t unnamed = 0;
  for (const Tensor& w : graph.outside) {
    const auto it = names.find(w.id());
    std::string name = it != names.end() ? it->second : "const_" + std::to_string(unnamed++);
    while (!taken.insert(name).second) name = "const_" + std::to_string(unnamed++);
    g.bind(w.id(), name);
    const std::vector<std::byte> bytes = weight_bytes(w, name);
    g.initializer(name, w.dtype(), w.shape(), bytes.data(), bytes.size());
  }

  // What later nodes or the output read: an unused second output need not be written.
  std::set<EntityId> used{output.id};
  for (const RecordedGraph::Node& n : graph.nodes)
    for (const RecordedGraph::Value& v : n.inputs) used.insert(v.id);
  for (const RecordedGraph::Node& n : graph.nodes) detail::export_node(g, n, used);
  set_value_info(*gp.add_output(), options.output_name, output.dtype, output.shape, g.batched(output.id));
  return model;
}

std::vector<std::byte> serialize(const ::onnx::ModelProto& model) {
  std::string s;
  KILN_CHECK(model.SerializeToString(&s), "onnx export", "the model does not serialize (over 2 GiB?)");
  std::vector<std::byte> bytes(s.size());
  if (!s.empty()) std::memcpy(bytes.data(), s.data(), s.size());
  return bytes;
}

// Atomically (io's AtomicFile: a temporary file flushed, then renamed over the target).
void write_file(const std::vector<std::byte>& bytes, const std::filesystem::path& path) {
  io::detail::AtomicFile file(path, "onnx export");
  file.write(bytes);
  file.commit();
}

RecordedPass record_module(const nn::Module& module, const std::function<Tensor(const Tensor&)>& forward,
                           const Shape& input_shape, ExportOptions& options, Device device) {
  const NoGradGuard no_grad;  // a recorded pass takes no gradients
  for (nn::NamedTensor& nt : module.state_dict()) options.weight_names.push_back(std::move(nt));
  return RecordedPass::record(forward, input_shape, DType::f32, device);
}

}  // namespace

std::vector<std::byte> export_to_bytes(const RecordedPass& pass, const ExportOptions& options) {
  return serialize(build(pass.graph(), options));
}

void export_model(const RecordedPass& pass, const std::filesystem::path& path, const ExportOptions& options) {
  write_file(export_to_bytes(pass, options), path);
}

std::vector<std::byte> export_to_bytes(const nn::Module& module, const std::function<Tensor(const Tensor&)>& forward,
                                       const Shape& input_shape, ExportOptions options, Device device) {
  const RecordedPass pass = record_module(module, forward, input_shape, options, device);
  return export_to_bytes(pass, options);
}

void export_model(const nn::Module& module, const std::function<Tensor(const Tensor&)>& forward,
                  const Shape& input_shape, const std::filesystem::path& path, ExportOptions options, Device device) {
  write_file(export_to_bytes(module, forward, input_shape, std::move(options), device), path);
}

}  // namespace kiln::onnx
