// The backward graph (internal to autograd/): one GradNode per recorded op, linked to the nodes
// that made its inputs. The graph owns no device state of its own: it holds tensor handles
// (the values a backward rule asked to keep) and releases them as soon as backward used them.
//
// Ownership, and why there are no cycles:
//   user handle U --autograd--> AutogradMeta --node--> GradNode --edges--> producer nodes
//   U --owner--> A (the handle that owns the entity; it carries no meta)
// A node that keeps one of its own outputs keeps A, never U, so node -> output -> meta -> node
// cannot close. Every handle with meta is such a U (a second handle, see TensorState::owner).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/autograd/autograd.h"
#include "kiln/autograd/rules.h"
#include "kiln/engine/submit.h"

namespace kiln::detail {

// Where the gradient of one forward input goes: the node that made it (and which of its
// outputs it was), or a leaf (keyed by its entity id). Neither: the input takes no gradient.
struct Edge {
  std::shared_ptr<GradNode> node;
  std::uint32_t output = 0;
  EntityId leaf = 0;
  bool active() const { return node != nullptr || leaf != 0; }
};

// A value a rule or a replay needs at backward: kept (`value`), or recomputed from the node
// that made it (`node`, `output`) when that node is recomputable.
struct Source {
  Tensor value;
  std::shared_ptr<GradNode> node;
  std::uint32_t output = 0;
};

class GradNode {
 public:
  autograd::ForwardRecord fwd;  // inputs/outputs are filled only while the rule runs
  autograd::BackwardRule rule;
  Device device;
  std::vector<Edge> edges;  // one per forward input
  // Saved inputs: one per input when the rule saves inputs, or when the node is recomputable
  // (its replay needs every input); otherwise empty.
  std::vector<Source> sources;
  std::vector<Tensor> kept_outputs;  // the rule saves outputs and the node keeps them
  std::vector<Tensor> recomputed;    // outputs replayed during backward, freed with the node
  bool recomputable = false;         // its outputs are replayed from `sources` instead of kept
  bool holds_values = false;         // it saved something, so it can run only once
  bool released = false;             // backward ran it and freed what it saved
  // A custom function's node (custom_function): its backward, run instead of rule.fn, and its
  // name for error messages. Unset for the nodes of built-in ops.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> custom_backward;
  std::string custom_name;

  GradNode() = default;
  GradNode(const GradNode&) = delete;
  GradNode& operator=(const GradNode&) = delete;
  // Frees long chains iteratively, so that dropping a deep graph cannot overflow the stack.
  ~GradNode();

  // Frees every value the node holds; later uses are an error.
  void release();
};

// A tensor's place in a graph: the node that made it and which output it is; a leaf has none.
struct AutogradMeta {
  std::shared_ptr<GradNode> node;
  std::uint32_t output = 0;
  // An input of a checkpoint() region: ops keep it as a value, never as a recipe, so that
  // replaying one region never replays the regions before it.
  bool region_input = false;
  bool is_leaf() const { return node == nullptr; }
};

// What error messages call the node: its op's name, or the custom function's.
std::string node_name(const GradNode& n);

// The rule table the recorder reads: autograd::backward_rules(), unless a test installed its own.
const autograd::RuleTable& active_rules();
// Test-only: replaces the rule table for every thread (nullptr restores the real one). Call it
// while no other thread records ops.
void set_rules_for_testing(const autograd::RuleTable* table);

// Installs the recording hooks into the submit path (once; cheap afterwards).
void ensure_autograd_hooks();

// A second handle U to t's entity carrying `meta` (see the top of this file).
Tensor graph_handle(const Tensor& t, std::shared_ptr<AutogradMeta> meta);
// Where the gradient of an op's input `t` goes: the node and output that made it, its leaf, or
// nowhere (it requires no gradient).
Edge edge_to(const Tensor& t);
// The handle that owns t's entity (t itself when it is not a graph handle).
const std::shared_ptr<TensorState>& entity_owner(const Tensor& t);

// Thread-local recording modes.
CheckpointPolicy current_checkpoint_policy();

}  // namespace kiln::detail
