// backward(): walks the graph from one output in reverse topological order, runs each node's
// rule (tensor ops, so nothing here waits on a value), accumulates gradients with add, and
// frees what each node kept as soon as its rule has used it. Values of recomputable nodes
// (checkpointing) are replayed on first use and freed with the node.
#include <string>
#include <unordered_map>

#include "kiln/autograd/graph.h"
#include "kiln/ops/registry.h"
#include "kiln/base/trace.h"

namespace kiln {

namespace {

using detail::Edge;
using detail::GradNode;
using detail::Source;

void check_usable(const GradNode& n) {
  KILN_CHECK(!(n.released && n.holds_values), "backward",
             "the graph through '" + detail::node_name(n) +
                 "' was already used by an earlier backward, which freed the values it kept; run the forward "
                 "pass again before another backward");
}

Tensor value_of(Source& s);

// Replays a recomputable node's op from its inputs (themselves replayed when needed).
void replay(GradNode& n) {
  if (!n.recomputed.empty()) return;
  check_usable(n);
  std::vector<Tensor> ins;
  ins.reserve(n.sources.size());
  for (Source& s : n.sources) ins.push_back(value_of(s));
  NoGradGuard no_grad;
  n.recomputed = detail::submit(n.fwd.kind, ins.data(), ins.size(), n.fwd.attrs, n.device);
}

Tensor value_of(Source& s) {
  if (s.value.defined()) return s.value;
  replay(*s.node);
  return s.node->recomputed[s.output];
}

// A custom function's backward sees a gradient for every output: zeros for one that got none.
std::vector<Tensor> run_custom(GradNode& n, const std::vector<Tensor>& grads_out) {
  std::vector<Tensor> grads = grads_out;
  for (std::size_t o = 0; o < grads.size(); ++o) {
    const TensorIr& out = n.fwd.output_meta[o];
    if (!grads[o].defined()) grads[o] = zeros(out.shape, {out.dtype, n.device});
  }
  return n.custom_backward(grads);
}

std::vector<Tensor> run_rule(GradNode& n, const std::vector<Tensor>& grads_out) {
  if (n.rule.saves_inputs) {
    n.fwd.inputs.clear();
    for (Source& s : n.sources) n.fwd.inputs.push_back(value_of(s));
  }
  if (n.rule.saves_outputs) {
    if (n.recomputable) replay(n);
    n.fwd.outputs = n.recomputable ? n.recomputed : n.kept_outputs;
  }
  n.fwd.input_needs_grad.resize(n.edges.size());
  for (std::size_t i = 0; i < n.edges.size(); ++i) n.fwd.input_needs_grad[i] = n.edges[i].active();
  NoGradGuard no_grad;  // rules are not recorded: no higher-order gradients
  std::vector<Tensor> grads_in = n.custom_backward ? run_custom(n, grads_out) : n.rule.fn(n.fwd, grads_out);
  KILN_CHECK(grads_in.size() == n.edges.size(), "backward",
             "the backward of '" + detail::node_name(n) + "' returned " + std::to_string(grads_in.size()) +
                 " gradients for " + std::to_string(n.edges.size()) + " inputs");
  return grads_in;
}

// A gradient takes its input's dtype, as in PyTorch's engine: an f16 tensor added to an f32 one
// gives an f32 result, whose f32 gradient goes back to the f16 input as f16.
Tensor in_input_dtype(const GradNode& n, std::size_t i, Tensor g) {
  const DType want = n.fwd.input_meta[i].dtype;
  if (g.dtype() == want || !is_floating(want) || !is_floating(g.dtype())) return g;
  NoGradGuard no_grad;
  return cast(std::move(g), want);
}

void check_gradient(const GradNode& n, std::size_t i, const Tensor& g) {
  const TensorIr& in = n.fwd.input_meta[i];
  KILN_CHECK(g.shape() == in.shape && g.dtype() == in.dtype, "backward",
             "the backward of '" + detail::node_name(n) + "' returned a gradient " +
                 dtype_name(g.dtype()) + g.shape().str() + " for input #" + std::to_string(i) + " " + describe(in));
}

Tensor accumulated(Tensor acc, Tensor g) { return acc.defined() ? add(std::move(acc), std::move(g)) : g; }

struct NodeState {
  int pending = 0;            // edges from nodes not yet run
  std::vector<Tensor> grads;  // gradient of each output so far
};

// Per leaf: edges not yet run, and its gradient so far (reported to the hook when complete).
struct LeafState {
  int pending = 0;
  Tensor grad;
};

Gradients run_backward(const Tensor& root, Tensor seed, const GradientReadyHook& on_ready = {}) {
  const trace::Span span("backward", "autograd");  // the submission of its ops (they run later)
  const detail::AutogradMeta& meta = *root.state()->autograd;
  Gradients result;
  if (meta.is_leaf()) {
    if (on_ready) on_ready(root.id(), seed);
    result.accumulate(root.id(), std::move(seed));
    return result;
  }
  // Pass 1: the nodes the root depends on, and how many edges reach each. Nothing is submitted
  // before the whole graph is known to be usable.
  std::unordered_map<GradNode*, NodeState> state;
  std::unordered_map<EntityId, LeafState> leaves;  // counted only when a hook wants them
  GradNode* const start = meta.node.get();
  state[start];
  std::vector<GradNode*> stack{start};
  while (!stack.empty()) {
    GradNode* n = stack.back();
    stack.pop_back();
    check_usable(*n);
    for (Edge& e : n->edges) {
      if (on_ready && !e.node && e.leaf != 0) ++leaves[e.leaf].pending;
      if (!e.node) continue;
      auto [it, inserted] = state.try_emplace(e.node.get());
      ++it->second.pending;
      if (inserted) stack.push_back(e.node.get());
    }
  }

  // Pass 2: a node runs once every node that used its outputs has run (Kahn's order).
  NodeState& first = state[start];
  first.grads.resize(start->fwd.output_meta.size());
  first.grads[meta.output] = std::move(seed);
  std::vector<GradNode*> ready{start};
  while (!ready.empty()) {
    GradNode* n = ready.back();
    ready.pop_back();
    NodeState& ns = state[n];
    ns.grads.resize(n->fwd.output_meta.size());
    bool any = false;
    for (const Tensor& g : ns.grads) any |= g.defined();
    std::vector<Tensor> grads_in = any ? run_rule(*n, ns.grads) : std::vector<Tensor>(n->edges.size());
    ns.grads.clear();
    n->release();  // kept and replayed values are freed right after the rule used them
    for (std::size_t i = 0; i < n->edges.size(); ++i) {
      Edge& e = n->edges[i];
      Tensor g = std::move(grads_in[i]);
      if (g.defined() && e.active()) {
        g = in_input_dtype(*n, i, std::move(g));
        check_gradient(*n, i, g);
      }
      if (e.node) {
        NodeState& ps = state[e.node.get()];
        if (g.defined()) {
          ps.grads.resize(e.node->fwd.output_meta.size());
          ps.grads[e.output] = accumulated(std::move(ps.grads[e.output]), std::move(g));
        }
        if (--ps.pending == 0) ready.push_back(e.node.get());
      } else if (e.leaf != 0 && on_ready) {
        LeafState& ls = leaves[e.leaf];
        if (g.defined()) ls.grad = accumulated(std::move(ls.grad), std::move(g));
        if (--ls.pending == 0 && ls.grad.defined()) {
          on_ready(e.leaf, ls.grad);
          result.accumulate(e.leaf, std::move(ls.grad));
        }
      } else if (e.leaf != 0 && g.defined()) {
        result.accumulate(e.leaf, std::move(g));
      }
    }
  }
  return result;
}

void check_root(const Tensor& t) {
  KILN_CHECK(t.defined(), "backward", "the tensor is undefined");
  KILN_CHECK(requires_grad(t), "backward",
             "the tensor " + std::string(dtype_name(t.dtype())) + t.shape().str() +
                 " has no backward graph: no input of the ops that made it requires gradients (mark parameters "
                 "with require_grad), or it was made under NoGradGuard or detached");
}

}  // namespace

Gradients backward(const Tensor& loss) {
  check_root(loss);
  KILN_CHECK(loss.numel() == 1, "backward",
             "backward(loss) needs a scalar (one element), got " + std::string(dtype_name(loss.dtype())) +
                 loss.shape().str() + "; for other outputs pass the seed gradient: backward(output, seed)");
  return run_backward(loss, full(loss.shape(), 1.0, {loss.dtype(), loss.device()}));
}

Gradients backward(const Tensor& output, const Tensor& seed) {
  check_root(output);
  KILN_CHECK(seed.defined(), "backward", "the seed gradient is undefined");
  KILN_CHECK(seed.shape() == output.shape() && seed.dtype() == output.dtype() && seed.device() == output.device(),
             "backward",
             "the seed gradient must be of the output's dtype and shape, on its device: output " +
                 std::string(dtype_name(output.dtype())) + output.shape().str() + " on " + output.device().str() +
                 ", seed " + dtype_name(seed.dtype()) + seed.shape().str() + " on " + seed.device().str());
  return run_backward(output, detach(seed));
}

Gradients backward(const Tensor& loss, const GradientReadyHook& on_ready) {
  check_root(loss);
  KILN_CHECK(loss.numel() == 1, "backward",
             "backward(loss, on_ready) needs a scalar (one element), got " + std::string(dtype_name(loss.dtype())) +
                 loss.shape().str());
  return run_backward(loss, full(loss.shape(), 1.0, {loss.dtype(), loss.device()}), on_ready);
}

}  // namespace kiln
