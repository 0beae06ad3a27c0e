#include "kiln/onnx/op_registry.h"

#include <onnx/defs/schema.h>

#include "kiln/base/log.h"

namespace kiln::onnx::detail {

Tensor OpContext::tensor(const Value& v) const {
  check(v.defined(), "an input is missing");
  if (v.tensor.defined()) return v.tensor.device() == device ? v.tensor : to(v.tensor, device);
  return v.host->to_tensor(device);
}

HostTensor OpContext::host(const Value& v) const {
  check(v.defined(), "an input is missing");
  if (v.host) return *v.host;
  // A value the op needs on the host came from device work: reading it waits for that work
  // (and cannot be recorded). Files whose shape inputs are graph inputs do this.
  if (log_enabled(spdlog::level::debug)) {
    logger().debug("onnx: {} reads a device value {} on the host", node.label(), v.tensor.shape().str());
  }
  return HostTensor::from_tensor(v.tensor);
}

std::vector<std::int64_t> OpContext::ints(const Value& v) const {
  const HostTensor h = host(v);
  if (h.is_integer()) return h.ints;
  std::vector<std::int64_t> r;
  for (float f : h.floats) r.push_back(std::int64_t(f));
  return r;
}

std::vector<double> OpContext::doubles(const Value& v) const {
  const HostTensor h = host(v);
  std::vector<double> r;
  for (std::size_t k = 0; k < h.size(); ++k) r.push_back(h.at(k));
  return r;
}

void OpContext::check(bool cond, const std::string& message) const {
  if (!cond) throw Error("onnx", node.label() + ": " + message);
}

void OpContext::unsupported(const std::string& what) const {
  throw UnsupportedError(node.op_type, node.label() + ": " + what + " is not supported",
                         node.op_type + " (" + what + ")");
}

std::int64_t normalize_axis(const OpContext& ctx, std::int64_t axis, std::int64_t rank) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  ctx.check(a >= 0 && a < std::max<std::int64_t>(rank, 1),
            "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

bool all_on_host(const std::vector<Value>& in) {
  for (const auto& v : in)
    if (v.defined() && !v.on_host()) return false;
  return true;
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_shape_ops(t);
    add_nn_ops(t);
    add_reduce_ops(t);
    add_rnn_ops(t);
    add_extra_ops(t);
    add_creation_ops(t);
    return t;
  }();
  return table;
}

const OpFunction* find_op(const std::string& op_type) {
  const auto& t = op_table();
  const auto it = t.find(op_type);
  return it == t.end() ? nullptr : &it->second;
}

namespace {
// The version of an op's definition in force at `opset` (0: none).
int since_version(const std::string& op_type, std::int64_t opset) {
  const auto* schema = ::onnx::OpSchemaRegistry::Schema(op_type, int(opset), "");
  return schema ? schema->since_version() : 0;
}
}  // namespace

void check_supported(const Graph& g) {
  for (const auto& node : g.nodes) {
    // An older file runs where each op means what it means at kMinOpset (ONNX's schemas say
    // when each op's definition last changed).
    if (g.opset < kMinOpset && since_version(node.op_type, g.opset) != since_version(node.op_type, kMinOpset)) {
      throw UnsupportedError(node.op_type,
                             g.source + ": " + node.label() + ": opset " + std::to_string(g.opset) + " defines " +
                                 node.op_type + " differently from opset " + std::to_string(kMinOpset) +
                                 " (kiln loads opsets " + std::to_string(kMinOpset) + " to " +
                                 std::to_string(kMaxOpset) + ")",
                             "opset " + std::to_string(g.opset));
    }
    if (!find_op(node.op_type)) {
      throw UnsupportedError(node.op_type,
                             g.source + ": " + node.label() + ": op type " + node.op_type + " is not supported",
                             node.op_type);
    }
  }
}

}  // namespace kiln::onnx::detail
