// onnx::Model: the initializers as the module's state, and the forward pass that walks the
// graph's nodes in order, each through its op function (op_registry.h).
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <unordered_map>

#include "kiln/base/log.h"
#include "kiln/onnx/graph.h"
#include "kiln/onnx/op_registry.h"
#include "kiln/onnx/tensor_proto.h"

namespace kiln::onnx {

using detail::Graph;
using detail::HostTensor;
using detail::OpContext;
using detail::Value;

Model::Model(std::shared_ptr<const Graph> graph) : graph_(std::move(graph)) {
  for (const auto& init : graph_->initializers) {
    if (init.is_constant) continue;
    const Tensor t = init.value->to_tensor(Device::cpu());
    if (init.is_buffer) {
      buffer_names_.push_back(init.name);
      buffers_.emplace_back(t);
    } else {
      parameter_names_.push_back(init.name);
      parameters_.emplace_back(t);
    }
  }
}

const std::vector<ValueInfo>& Model::inputs() const { return graph_->inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return graph_->outputs; }
std::int64_t Model::opset() const { return graph_->opset; }
const std::string& Model::source() const { return graph_->source; }

std::vector<std::string> Model::op_types() const {
  std::set<std::string> types;
  for (const auto& n : graph_->nodes) types.insert(n.op_type);
  return {types.begin(), types.end()};
}

void Model::visit_fields(nn::FieldVisitor& v) {
  for (std::size_t k = 0; k < parameters_.size(); ++k) v.field(parameter_names_[k].c_str(), parameters_[k]);
  for (std::size_t k = 0; k < buffers_.size(); ++k) v.field(buffer_names_[k].c_str(), buffers_[k]);
}

std::string Model::describe() const {
  if (!graph_) return "empty";
  return "opset=" + std::to_string(graph_->opset) + ", nodes=" + std::to_string(graph_->nodes.size()) +
         ", source=" + graph_->source;
}

Model Model::to(Device device) const {
  Model m(*this);
  m.move_to_in_place(device);
  return m;
}

Model Model::clone() const {
  Model m(*this);
  m.deep_copy_in_place();
  return m;
}

namespace {

// The inputs against the graph's declared types and dims; a dim named in the file must take the
// same size in every input that names it.
void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  KILN_CHECK(inputs.size() == g.inputs.size(), "onnx",
             g.source + ": the model takes " + std::to_string(g.inputs.size()) + " inputs, got " +
                 std::to_string(inputs.size()));
  std::unordered_map<std::string, std::int64_t> named;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const auto& info = g.inputs[k];
    const auto& x = inputs[k];
    const std::string what = g.source + ": input '" + info.name + "'";
    KILN_CHECK(x.defined(), "onnx", what + " is undefined");
    KILN_CHECK(
        x.device() == inputs[0].device(), "onnx",
        what + " is on " + x.device().str() + ", input '" + g.inputs[0].name + "' on " + inputs[0].device().str());
    KILN_CHECK(x.dtype() == info.dtype, "onnx",
               what + " expects " + dtype_name(info.dtype) + ", got " + dtype_name(x.dtype()));
    if (!info.has_shape) continue;
    const std::string dims = detail::shape_str(info.dims) + " (-1: any)";
    KILN_CHECK(x.rank() == std::int64_t(info.dims.size()), "onnx",
               what + " expects shape " + dims + ", got " + x.shape().str());
    for (std::size_t d = 0; d < info.dims.size(); ++d) {
      if (info.dims[d] >= 0) {
        KILN_CHECK(x.shape()[int(d)] == info.dims[d], "onnx",
                   what + " expects shape " + dims + ", got " + x.shape().str());
      } else if (info.dim_names[d] != "?" && !info.dim_names[d].empty()) {
        const auto [it, fresh] = named.emplace(info.dim_names[d], x.shape()[int(d)]);
        KILN_CHECK(fresh || it->second == x.shape()[int(d)], "onnx",
                   what + ": dim '" + info.dim_names[d] + "' is " + std::to_string(x.shape()[int(d)]) + " here but " +
                       std::to_string(it->second) + " in an earlier input");
      }
    }
  }
}

}  // namespace

std::vector<Tensor> Model::forward(const std::vector<Tensor>& inputs) const {
  KILN_CHECK(graph_ != nullptr, "onnx", "forward on an empty model");
  const Graph& g = *graph_;
  check_inputs(g, inputs);
  Device device = Device::cpu();
  if (!inputs.empty())
    device = inputs[0].device();
  else if (!parameters_.empty())
    device = parameters_[0].value().device();

  std::unordered_map<std::string, Value> env;
  for (const auto& init : g.initializers)
    if (init.is_constant) env[init.name] = Value{Tensor{}, init.value};
  for (std::size_t k = 0; k < parameters_.size(); ++k) env[parameter_names_[k]] = Value::of(parameters_[k].value());
  std::unordered_map<std::string, std::size_t> buffer_index;
  for (std::size_t k = 0; k < buffers_.size(); ++k) {
    env[buffer_names_[k]] = Value::of(buffers_[k].get());
    buffer_index[buffer_names_[k]] = k;
  }
  for (std::size_t k = 0; k < inputs.size(); ++k) env[g.inputs[k].name] = Value::of(inputs[k]);

  const auto update_buffer = [&](const std::string& name, const Tensor& value) {
    const auto it = buffer_index.find(name);
    if (it != buffer_index.end()) buffers_[it->second].update(value);
  };
  std::vector<Value> in;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const auto& node = g.nodes[k];
    in.clear();
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        in.emplace_back();
        continue;
      }
      const auto it = env.find(name);
      KILN_CHECK(it != env.end() && it->second.defined(), "onnx",
                 g.source + ": " + node.label() + ": input '" + name +
                     "' was not produced (an optional output kiln leaves out)");
      in.push_back(it->second);
    }
    OpContext ctx{node, device, is_training(), g.opset, update_buffer};
    std::vector<Value> out;
    try {
      out = (*detail::find_op(node.op_type))(ctx, in);
    } catch (const UnsupportedError&) {
      throw;
    } catch (const Error& e) {
      const std::string message = e.what();
      if (message.find(node.label()) != std::string::npos) throw Error("onnx", g.source + ": " + message.substr(6));
      throw Error("onnx", g.source + ": " + node.label() + ": " + message);
    } catch (const std::exception& e) {  // a missing value (std::out_of_range), a bad size
      throw Error("onnx", g.source + ": " + node.label() + ": " + e.what());
    }
    for (std::size_t j = 0; j < node.outputs.size(); ++j) {
      if (node.outputs[j].empty()) continue;
      env[node.outputs[j]] = j < out.size() ? out[j] : Value{};
    }
    for (const auto& name : g.last_uses[k]) env.erase(name);
  }
  std::vector<Tensor> result;
  for (const auto& info : g.outputs) {
    const auto it = env.find(info.name);
    KILN_CHECK(it != env.end() && it->second.defined(), "onnx",
               g.source + ": output '" + info.name + "' was not produced");
    const Value& v = it->second;
    result.push_back(v.tensor.defined() ? v.tensor : v.host->to_tensor(device));
  }
  return result;
}

std::map<std::string, Tensor> Model::forward(const std::map<std::string, Tensor>& inputs) const {
  KILN_CHECK(graph_ != nullptr, "onnx", "forward on an empty model");
  std::vector<Tensor> ordered;
  for (const auto& info : graph_->inputs) {
    const auto it = inputs.find(info.name);
    KILN_CHECK(it != inputs.end(), "onnx", graph_->source + ": input '" + info.name + "' is not given");
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& info : graph_->inputs) known = known || info.name == name;
    KILN_CHECK(known, "onnx", graph_->source + ": the model has no input '" + name + "'");
  }
  const auto outs = forward(ordered);
  std::map<std::string, Tensor> result;
  for (std::size_t k = 0; k < outs.size(); ++k) result[graph_->outputs[k].name] = outs[k];
  return result;
}

Tensor Model::forward(const Tensor& x) const {
  KILN_CHECK(graph_ != nullptr, "onnx", "forward on an empty model");
  KILN_CHECK(graph_->outputs.size() == 1, "onnx",
             graph_->source + ": forward(x) needs a model of one output; this one has " +
                 std::to_string(graph_->outputs.size()) + " (use forward({...}))");
  return forward(std::vector<Tensor>{x})[0];
}

Model load_from_bytes(std::span<const std::byte> bytes, const std::filesystem::path& base_dir,
                      const std::string& source) {
  auto graph = detail::parse_model(bytes, base_dir, source);
  detail::check_supported(*graph);
  if (log_enabled(spdlog::level::debug)) {
    logger().debug("onnx: loaded {} (opset {}, {} nodes, {} initializers)", source, graph->opset, graph->nodes.size(),
                   graph->initializers.size());
  }
  // Loaded for inference, as ONNX Runtime runs a file; train() turns on Dropout and batch
  // statistics for fine-tuning.
  Model model(std::move(graph));
  model.eval();
  return model;
}

namespace {
std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  KILN_CHECK(f.good(), "onnx", "cannot open '" + path.string() + "'");
  std::vector<char> chars((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}
}  // namespace

Model load(const std::filesystem::path& path) {
  const auto bytes = read_file(path);
  return load_from_bytes(bytes, path.parent_path(), path.string());
}

nn::NamedTensor load_tensor(const std::filesystem::path& path, Device device) {
  const auto bytes = read_file(path);
  ::onnx::TensorProto proto;
  KILN_CHECK(bytes.size() < (std::size_t(1) << 31) && proto.ParseFromArray(bytes.data(), int(bytes.size())), "onnx",
             path.string() + ": not a TensorProto (malformed or truncated protobuf)");
  const HostTensor h = detail::read_tensor_proto(proto, path.parent_path(), path.string());
  return {proto.name(), h.to_tensor(device)};
}

std::vector<std::string> supported_op_types() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : detail::op_table()) names.push_back(name);
  return names;
}

}  // namespace kiln::onnx
