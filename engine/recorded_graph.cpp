#include "kiln/engine/recorded_graph.h"

#include "kiln/engine/recorded_function.h"
#include "kiln/engine/recorded_pass.h"
#include "kiln/engine/submit.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

std::vector<RecordedGraph::Value> values_of(const TensorList& list) {
  std::vector<RecordedGraph::Value> out;
  out.reserve(list.size());
  for (const TensorIr& t : list) out.push_back({t.id, t.shape, t.dtype});
  return out;
}

}  // namespace

const char* RecordedGraph::Node::name() const { return op_name(kind); }

RecordedGraph RecordedFunction::graph() const {
  KILN_CHECK(ops_ != nullptr, name_, "the recording was moved from");
  RecordedGraph g;
  // The shapes of the inputs and outputs come from the specs; the ids from the recording.
  for (std::size_t i = 0; i < ops_->inputs.size(); ++i)
    g.inputs.push_back({ops_->inputs[i], inputs_[i].shape, inputs_[i].dtype});
  for (const TensorIr& h : ops_->host_inputs) g.host_inputs.push_back({h.id, h.shape, h.dtype});
  for (std::size_t i = 0; i < ops_->outputs.size(); ++i)
    g.outputs.push_back({ops_->outputs[i], outputs_[i].shape, outputs_[i].dtype});
  for (const OpIr& op : ops_->ops) {
    if (op.kind == OpKind::drop) continue;
    RecordedGraph::Node n;
    n.kind = op.kind;
    n.attrs = op.attrs;
    n.inputs = values_of(op.inputs);
    n.outputs = values_of(op.outputs);
    if (op.kind == OpKind::upload) n.host_data = op.host_data;
    g.nodes.push_back(std::move(n));
  }
  // The recorder keeps the weights' handles type-erased (ops/ knows no tensors): they are the
  // engine's TensorStates, which a Tensor handle shares again.
  for (const std::shared_ptr<void>& s : ops_->outside)
    g.outside.emplace_back(std::static_pointer_cast<detail::TensorState>(s));
  g.reseeded = ops_->reseeded;
  return g;
}

RecordedGraph RecordedPass::graph() const { return function_.graph(); }

}  // namespace kiln
