// ModelProto -> Graph, with every check that needs no values: the opset, unique names, each
// node input produced before use (a topological order; what cannot be ordered is a cycle), op
// types the loader runs (check_supported, op_registry.cpp). Host code only: the fuzzer builds it
// without the engine.
#include <onnx/onnx_pb.h>

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kiln/onnx/graph.h"
#include "kiln/onnx/tensor_proto.h"

namespace kiln::onnx::detail {
namespace {

ValueInfo value_info(const ::onnx::ValueInfoProto& v, const std::string& source) {
  ValueInfo info;
  info.name = v.name();
  const std::string what = source + ": graph value '" + v.name() + "'";
  if (!v.has_type() || !v.type().has_tensor_type()) {
    if (v.has_type() && v.type().value_case() != ::onnx::TypeProto::VALUE_NOT_SET) {
      throw UnsupportedError("(graph)", what + " is not a tensor (sequence, map or optional)", "non-tensor value");
    }
    return info;  // untyped: dtype and shape come from the value itself
  }
  const auto& tt = v.type().tensor_type();
  info.dtype = kiln_dtype(tt.elem_type(), what);
  if (tt.has_shape()) {
    info.has_shape = true;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) {
        info.dims.push_back(d.dim_value());
        info.dim_names.emplace_back();
      } else {
        info.dims.push_back(-1);
        info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : std::string("?"));
      }
    }
  }
  return info;
}

Attribute attribute(const ::onnx::AttributeProto& a, const std::filesystem::path& base_dir, const std::string& what) {
  using A = ::onnx::AttributeProto;
  Attribute r;
  switch (a.type()) {
    case A::FLOAT:
      r.kind = Attribute::Kind::f;
      r.f = a.f();
      break;
    case A::INT:
      r.kind = Attribute::Kind::i;
      r.i = a.i();
      break;
    case A::STRING:
      r.kind = Attribute::Kind::s;
      r.s = a.s();
      break;
    case A::TENSOR:
      r.kind = Attribute::Kind::t;
      r.t = std::make_shared<HostTensor>(read_tensor_proto(a.t(), base_dir, what + " attribute '" + a.name() + "'"));
      break;
    case A::GRAPH: r.kind = Attribute::Kind::g; break;
    case A::FLOATS:
      r.kind = Attribute::Kind::floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      r.kind = Attribute::Kind::ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      r.kind = Attribute::Kind::strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    default: r.kind = Attribute::Kind::other; break;
  }
  return r;
}

std::int64_t default_opset(const ::onnx::ModelProto& m, const std::string& source) {
  std::int64_t opset = -1;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (opset < 0 && m.opset_import_size() > 0) {
    const std::string domain = m.opset_import(0).domain();
    throw UnsupportedError("(model)", source + ": no opset of the default domain (ai.onnx), only of '" + domain + "'",
                           "domain " + domain);
  }
  if (opset < 0) opset = 1;  // IR version 2 files had no opset_import
  // Opsets below kMinOpset pass here; check_supported takes such a file only where each of its
  // ops is defined as at kMinOpset.
  if (opset < 1 || opset > kMaxOpset) {
    throw UnsupportedError("(model)",
                           source + ": opset " + std::to_string(opset) + " is not supported (kiln loads " +
                               std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")",
                           "opset " + std::to_string(opset));
  }
  return opset;
}

// Orders nodes so that each comes after the producers of its inputs (Kahn's algorithm).
std::vector<Node> topological_order(std::vector<Node> nodes, const std::unordered_set<std::string>& available,
                                    const std::string& source) {
  std::unordered_map<std::string, std::size_t> producer;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    for (const auto& out : nodes[k].outputs) {
      if (out.empty()) continue;
      KILN_CHECK(!available.count(out), "onnx",
                 source + ": " + nodes[k].label() + " writes '" + out + "', which is a graph input or initializer");
      KILN_CHECK(producer.emplace(out, k).second, "onnx",
                 source + ": " + nodes[k].label() + " writes '" + out + "', which " + nodes[producer[out]].label() +
                     " writes too");
    }
  }
  std::vector<std::size_t> waiting(nodes.size(), 0);
  std::vector<std::vector<std::size_t>> consumers(nodes.size());
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    for (const auto& in : nodes[k].inputs) {
      if (in.empty() || available.count(in)) continue;
      const auto p = producer.find(in);
      KILN_CHECK(
          p != producer.end(), "onnx",
          source + ": " + nodes[k].label() + " reads '" + in + "', which no node, initializer or graph input provides");
      ++waiting[k];
      consumers[p->second].push_back(k);
    }
  }
  std::vector<std::size_t> ready, order;
  for (std::size_t k = 0; k < nodes.size(); ++k)
    if (waiting[k] == 0) ready.push_back(k);
  // Keep the file's order among ready nodes (a stack of reversed indices would reorder them).
  std::set<std::size_t> queue(ready.begin(), ready.end());
  while (!queue.empty()) {
    const std::size_t k = *queue.begin();
    queue.erase(queue.begin());
    order.push_back(k);
    for (auto c : consumers[k])
      if (--waiting[c] == 0) queue.insert(c);
  }
  if (order.size() != nodes.size()) {
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      KILN_CHECK(waiting[k] == 0, "onnx",
                 source + ": the graph has a cycle: " + nodes[k].label() + " depends on its own output");
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (auto k : order) sorted.push_back(std::move(nodes[k]));
  return sorted;
}

}  // namespace

std::shared_ptr<const Graph> parse_model(std::span<const std::byte> bytes, const std::filesystem::path& base_dir,
                                         const std::string& source) {
  ::onnx::ModelProto m;
  KILN_CHECK(bytes.size() < (std::size_t(1) << 31), "onnx", source + ": larger than protobuf's 2 GiB limit");
  KILN_CHECK(m.ParseFromArray(bytes.data(), int(bytes.size())), "onnx",
             source + ": not an ONNX model (malformed or truncated protobuf)");
  KILN_CHECK(m.has_graph(), "onnx", source + ": the model holds no graph");
  auto g = std::make_shared<Graph>();
  g->source = source;
  g->serialized.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  g->opset = default_opset(m, source);
  const auto& graph = m.graph();

  std::unordered_set<std::string> available;
  for (const auto& init : graph.initializer()) {
    const std::string what = source + ": initializer '" + init.name() + "'";
    KILN_CHECK(!init.name().empty(), "onnx", source + ": an initializer without a name");
    KILN_CHECK(available.insert(init.name()).second, "onnx", what + " is defined twice");
    g->initializers.push_back(
        {init.name(), std::make_shared<HostTensor>(read_tensor_proto(init, base_dir, what)), false});
  }
  KILN_CHECK(graph.sparse_initializer_size() == 0, "onnx", source + ": sparse initializers are not supported");
  std::unordered_set<std::string> initializer_names = available;
  for (const auto& in : graph.input()) {
    if (initializer_names.count(in.name())) continue;  // opset < 9 files list initializers as inputs
    KILN_CHECK(!in.name().empty() && available.insert(in.name()).second, "onnx",
               source + ": graph input '" + in.name() + "' is empty or defined twice");
    g->inputs.push_back(value_info(in, source));
  }
  for (const auto& out : graph.output()) g->outputs.push_back(value_info(out, source));

  std::vector<Node> nodes;
  for (int k = 0; k < graph.node_size(); ++k) {
    const auto& n = graph.node(k);
    Node node;
    node.name = n.name().empty() ? "#" + std::to_string(k) : n.name();
    node.op_type = n.op_type();
    node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    if (!node.domain.empty() && node.domain != "ai.onnx") {
      throw UnsupportedError(node.op_type,
                             source + ": " + node.label() + ": domain '" + node.domain + "' is not supported",
                             node.domain + "." + node.op_type);
    }
    for (const auto& a : n.attribute())
      node.attributes[a.name()] = attribute(a, base_dir, source + ": " + node.label());
    nodes.push_back(std::move(node));
  }
  g->nodes = topological_order(std::move(nodes), available, source);

  std::unordered_set<std::string> produced = available;
  for (const auto& n : g->nodes)
    for (const auto& o : n.outputs) produced.insert(o);
  for (const auto& out : g->outputs) {
    KILN_CHECK(produced.count(out.name), "onnx", source + ": graph output '" + out.name + "' is never produced");
  }

  // Running statistics of BatchNormalization (inputs 3 and 4) are buffers: kept and saved, never
  // trained. Non-floating initializers (shape constants) stay host constants.
  std::unordered_map<std::string, std::size_t> init_index;
  for (std::size_t k = 0; k < g->initializers.size(); ++k) {
    auto& init = g->initializers[k];
    init_index[init.name] = k;
    init.is_constant = !is_floating(init.value->dtype);
  }
  for (const auto& n : g->nodes) {
    if (n.op_type != "BatchNormalization") continue;
    for (std::size_t k = 3; k < n.inputs.size() && k < 5; ++k) {
      const auto it = init_index.find(n.inputs[k]);
      if (it != init_index.end() && !g->initializers[it->second].is_constant)
        g->initializers[it->second].is_buffer = true;
    }
  }

  // The last reader of each value drops it, so a forward pass holds only what is still needed.
  std::unordered_set<std::string> keep;
  for (const auto& out : g->outputs) keep.insert(out.name);
  std::unordered_map<std::string, std::size_t> last;
  for (std::size_t k = 0; k < g->nodes.size(); ++k) {
    for (const auto& in : g->nodes[k].inputs)
      if (!in.empty()) last[in] = k;
    for (const auto& out : g->nodes[k].outputs)
      if (!out.empty() && !last.count(out)) last[out] = k;  // written but never read
  }
  g->last_uses.resize(g->nodes.size());
  for (const auto& [name, k] : last)
    if (!keep.count(name)) g->last_uses[k].push_back(name);
  return g;
}

}  // namespace kiln::onnx::detail
