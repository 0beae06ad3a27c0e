// Recording: the hooks the submit path calls for ops on tensors that require gradients, the
// leaves (require_grad), detach, and the thread-local modes (no-grad, checkpoint policy).
#include <atomic>

#include "kiln/autograd/graph.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

thread_local bool t_grad_enabled = true;
thread_local CheckpointPolicy t_policy = CheckpointPolicy::save_all;
std::atomic<const autograd::RuleTable*> g_test_rules{nullptr};

// Elementwise and layout ops are bound by memory traffic: replaying them is cheaper than keeping
// their outputs. Matmul, reductions and index ops are not replayed.
bool memory_bound(OpKind kind) {
  switch (op_info(kind).family) {
    case OpFamily::unary:
    case OpFamily::binary:
    case OpFamily::ternary:
    case OpFamily::layout: return true;
    default: return false;
  }
}

bool any_floating(const TensorList& ts) {
  for (const TensorIr& t : ts)
    if (is_floating(t.dtype)) return true;
  return false;
}

std::shared_ptr<detail::GradNode> begin_record(const OpIr& op, const TensorList& outputs,
                                               const Tensor* inputs) {
  if (!t_grad_enabled) return nullptr;
  const autograd::BackwardRule& rule = detail::active_rules()[op.kind];
  // No rule: the op is not differentiable (comparisons, argmax, ...); its outputs are constants.
  if (!rule.fn || !any_floating(outputs)) return nullptr;

  auto node = std::make_shared<detail::GradNode>();
  node->rule = rule;
  node->fwd.kind = op.kind;
  node->fwd.attrs = op.attrs;
  node->fwd.input_meta = op.inputs;
  node->fwd.output_meta = outputs;
  const std::size_t n = op.inputs.size();
  node->device = inputs[0].device();
  const CheckpointPolicy policy = t_policy;
  node->recomputable = policy == CheckpointPolicy::recompute_all ||
                       (policy == CheckpointPolicy::recompute_memory_bound && memory_bound(op.kind));

  node->edges.resize(n);
  for (std::size_t i = 0; i < n; ++i) node->edges[i] = detail::edge_to(inputs[i]);
  // Inputs are kept by copying their handles, before the in-place decision: an input kept here
  // is then never overwritten. Under a policy, an input that a recomputable node made is kept
  // as a recipe (that node and output) instead of a value.
  if (node->recomputable || rule.saves_inputs) {
    node->sources.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const detail::Edge& e = node->edges[i];
      const bool region_input = e.node && inputs[i].state()->autograd->region_input;
      if (policy != CheckpointPolicy::save_all && e.node && e.node->recomputable && !region_input) {
        node->sources[i].node = e.node;
        node->sources[i].output = e.output;
      } else {
        node->sources[i].value = inputs[i];
      }
    }
    node->holds_values = true;
  }
  if (rule.saves_outputs && !node->recomputable) node->holds_values = true;
  return node;
}

void finish_record(const std::shared_ptr<detail::GradNode>& node, Tensor* outputs, std::size_t n) {
  const bool keep = node->rule.saves_outputs && !node->recomputable;
  if (keep) node->kept_outputs.assign(outputs, outputs + n);  // the owning handles: no meta, no cycle
  for (std::size_t o = 0; o < n; ++o) {
    if (!is_floating(outputs[o].dtype())) continue;  // integer outputs (indices) take no gradient
    auto meta = std::make_shared<detail::AutogradMeta>();
    meta->node = node;
    meta->output = static_cast<std::uint32_t>(o);
    outputs[o] = detail::graph_handle(outputs[o], std::move(meta));
  }
}

const detail::AutogradHooks kHooks{&begin_record, &finish_record};

}  // namespace

namespace detail {

const autograd::RuleTable& active_rules() {
  const autograd::RuleTable* test = g_test_rules.load(std::memory_order_acquire);
  return test ? *test : autograd::backward_rules();
}

void set_rules_for_testing(const autograd::RuleTable* table) { g_test_rules.store(table, std::memory_order_release); }

void ensure_autograd_hooks() {
  static const bool installed = (install_autograd_hooks(&kHooks), true);
  (void)installed;
}

const std::shared_ptr<TensorState>& entity_owner(const Tensor& t) {
  const std::shared_ptr<TensorState>& s = t.state();
  return s->owner ? s->owner : s;
}

Edge edge_to(const Tensor& t) {
  Edge e;
  const AutogradMeta* meta = t.state()->autograd.get();
  if (!meta) return e;
  if (meta->is_leaf()) {
    e.leaf = t.id();
  } else {
    e.node = meta->node;
    e.output = meta->output;
  }
  return e;
}

Tensor graph_handle(const Tensor& t, std::shared_ptr<AutogradMeta> meta) {
  const std::shared_ptr<TensorState>& owner = entity_owner(t);
  auto s = std::make_shared<TensorState>(owner->id, owner->shape, owner->dtype, owner->device);
  s->consumed = true;  // the owner sends the drop
  s->owner = owner;
  s->autograd = std::move(meta);
  return Tensor(std::move(s));
}

CheckpointPolicy current_checkpoint_policy() { return t_policy; }

std::string node_name(const GradNode& n) {
  return n.custom_name.empty() ? std::string(op_name(n.fwd.kind)) : n.custom_name;
}

void GradNode::release() {
  fwd.inputs.clear();
  fwd.outputs.clear();
  sources.clear();
  kept_outputs.clear();
  recomputed.clear();
  released = true;
}

namespace {
// Moves every child node and kept handle out of `n`, so that destroying `n` recurses no further.
void take_children(GradNode& n, std::vector<std::shared_ptr<GradNode>>& nodes, std::vector<Tensor>& handles) {
  for (Edge& e : n.edges)
    if (e.node) nodes.push_back(std::move(e.node));
  for (Source& s : n.sources) {
    if (s.node) nodes.push_back(std::move(s.node));
    if (s.value.defined()) handles.push_back(std::move(s.value));
  }
}
}  // namespace

GradNode::~GradNode() {
  // A long chain would otherwise be freed by recursion (node -> edge -> node ... and node ->
  // kept input handle -> its meta -> node ...). Only what this thread holds alone is unlinked.
  std::vector<std::shared_ptr<GradNode>> nodes;
  std::vector<Tensor> handles;
  take_children(*this, nodes, handles);
  while (!nodes.empty() || !handles.empty()) {
    if (!handles.empty()) {
      Tensor t = std::move(handles.back());
      handles.pop_back();
      const std::shared_ptr<TensorState>& st = t.state();
      if (st.use_count() == 1 && st->autograd && st->autograd.use_count() == 1 && st->autograd->node)
        nodes.push_back(std::move(st->autograd->node));
      continue;  // the handle dies here, its node (if any) taken out
    }
    std::shared_ptr<GradNode> n = std::move(nodes.back());
    nodes.pop_back();
    if (n.use_count() == 1) take_children(*n, nodes, handles);
  }  // each node dies here with no children left
}

}  // namespace detail

Tensor require_grad(const Tensor& t) {
  KILN_CHECK(t.defined(), "require_grad", "the tensor is undefined");
  KILN_CHECK(
      is_floating(t.dtype()), "require_grad",
      std::string("only floating tensors can require gradients, got ") + dtype_name(t.dtype()) + t.shape().str());
  const detail::AutogradMeta* meta = t.state()->autograd.get();
  if (meta && meta->is_leaf()) return t;
  detail::ensure_autograd_hooks();
  return detail::graph_handle(t, std::make_shared<detail::AutogradMeta>());
}

bool requires_grad(const Tensor& t) { return t.defined() && t.state()->autograd != nullptr; }

bool is_leaf(const Tensor& t) { return requires_grad(t) && t.state()->autograd->is_leaf(); }

Tensor detach(const Tensor& t) {
  if (!requires_grad(t)) return t;
  return detail::graph_handle(t, nullptr);
}

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }
bool grad_enabled() { return t_grad_enabled; }

CheckpointScope::CheckpointScope(CheckpointPolicy policy) : previous_(t_policy) { t_policy = policy; }
CheckpointScope::~CheckpointScope() { t_policy = previous_; }

std::vector<Tensor> checkpoint(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Tensor>& inputs) {
  // The region sees its inputs through handles that mark them as region inputs (kept as values).
  std::vector<Tensor> region_inputs;
  region_inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    const detail::AutogradMeta* meta = t.defined() ? t.state()->autograd.get() : nullptr;
    if (!meta || meta->is_leaf()) {
      region_inputs.push_back(t);
      continue;
    }
    auto marked = std::make_shared<detail::AutogradMeta>(*meta);
    marked->region_input = true;
    region_inputs.push_back(detail::graph_handle(t, std::move(marked)));
  }
  CheckpointScope scope(CheckpointPolicy::recompute_all);
  return fn(region_inputs);
}

}  // namespace kiln
