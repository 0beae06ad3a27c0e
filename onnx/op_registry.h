// The ops the loader runs: one function per ONNX op type, each written with kiln's public ops
// (so an imported graph runs on every device, fuses and takes gradients), grouped by family in
// ops_*.cpp. A value may be known on the host (shape arithmetic, constants, integer initializers):
// ops whose inputs are all on the host compute on the host where they have a host form, so
// Shape -> Gather -> Concat -> Reshape never becomes device work.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/onnx/graph.h"
#include "kiln/onnx/host_tensor.h"

namespace kiln::onnx::detail {

// A value of the running graph: a device tensor, a host tensor, or both.
struct Value {
  Tensor tensor;
  std::shared_ptr<const HostTensor> host;

  static Value of(Tensor t) { return {std::move(t), nullptr}; }
  static Value of(HostTensor h) { return {Tensor{}, std::make_shared<const HostTensor>(std::move(h))}; }
  bool defined() const { return tensor.defined() || host != nullptr; }
  bool on_host() const { return host != nullptr; }
  DType dtype() const { return host ? host->dtype : tensor.dtype(); }
  std::vector<std::int64_t> shape() const { return host ? host->shape : tensor.shape().to_vector(); }
  std::int64_t rank() const { return std::int64_t(host ? host->shape.size() : tensor.shape().size()); }
};

struct OpContext {
  const Node& node;
  Device device;
  bool training = false;  // the module's mode (Dropout, BatchNormalization)
  std::int64_t opset = 0;
  // BatchNormalization in training mode writes its running statistics through this.
  std::function<void(const std::string& name, const Tensor& value)> update_buffer;

  // The value as a device tensor (a host value is copied to the device).
  Tensor tensor(const Value& v) const;
  // The value on the host (a device value is read back: a wait).
  HostTensor host(const Value& v) const;
  std::vector<std::int64_t> ints(const Value& v) const;
  std::vector<double> doubles(const Value& v) const;
  // An attribute or an input (newer opsets moved attributes such as axes into inputs).
  bool has_input(const std::vector<Value>& in, std::size_t k) const { return k < in.size() && in[k].defined(); }
  // kiln::Error naming the node unless cond.
  void check(bool cond, const std::string& message) const;
  [[noreturn]] void unsupported(const std::string& what) const;
};

using OpFunction = std::function<std::vector<Value>(OpContext& ctx, const std::vector<Value>& in)>;
using OpTable = std::map<std::string, OpFunction>;

const OpFunction* find_op(const std::string& op_type);
const OpTable& op_table();
// UnsupportedError naming the first node whose op type the table lacks.
void check_supported(const Graph& g);

// Each family fills the table (op_registry.cpp calls them all).
void add_elementwise_ops(OpTable& t);
void add_shape_ops(OpTable& t);
void add_nn_ops(OpTable& t);
void add_reduce_ops(OpTable& t);
void add_rnn_ops(OpTable& t);
void add_extra_ops(OpTable& t);
void add_creation_ops(OpTable& t);

// Helpers shared by the families.
using Values = std::vector<Value>;
inline Values one(Value v) { return Values{std::move(v)}; }
inline Values one(Tensor t) { return Values{Value::of(std::move(t))}; }
std::int64_t normalize_axis(const OpContext& ctx, std::int64_t axis, std::int64_t rank);
bool all_on_host(const std::vector<Value>& in);

}  // namespace kiln::onnx::detail
