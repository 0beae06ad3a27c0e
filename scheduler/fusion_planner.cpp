#include "kiln/scheduler/fusion_planner.h"

#include <algorithm>
#include <iterator>

#include "kiln/ops/elementwise_rules.h"
#include "kiln/base/log.h"
#include "kiln/ops/registry.h"

namespace kiln {

bool is_fusable(const OpIr& op) {
  const OpFamily f = op_info(op.kind).family;
  if (f != OpFamily::unary && f != OpFamily::binary && f != OpFamily::ternary) return false;
  // Every dtype: f16 and bf16 values (on the devices that have them) fuse like the others.
  return op.outputs.size() == 1 && op.inputs.size() <= 3;
}

namespace {

// An elementwise DAG being built: the entity each node makes, and which of them died inside.
class ExprBuilder {
 public:
  FusedExpr expr;

  bool empty() const { return expr.nodes.empty(); }
  std::size_t node_count() const { return expr.nodes.size(); }
  std::size_t input_count() const { return expr.inputs.size(); }
  bool produces(EntityId id) const { return node_of(id) >= 0; }
  bool reads(EntityId id) const { return input_of(id) >= 0; }

  // Linear searches, newest first: a group holds at most kMaxNodes nodes and kMaxInputs inputs,
  // and in a chain the operand is almost always the node just added. Cheaper than hash maps
  // rebuilt for every group (the planner runs on every flush).
  int node_of(EntityId id) const {
    for (std::size_t n = entity_of_node_.size(); n-- > 0;)
      if (entity_of_node_[n].id == id) return static_cast<int>(n);
    return -1;
  }
  int input_of(EntityId id) const {
    for (std::size_t k = 0; k < expr.inputs.size(); ++k)
      if (expr.inputs[k].id == id) return static_cast<int>(k);
    return -1;
  }

  // Inputs the op would add (to respect kMaxInputs before adding it).
  std::size_t new_inputs(const OpIr& op) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      const EntityId id = op.inputs[i].id;
      if (produces(id) || reads(id)) continue;
      bool seen = false;
      for (std::size_t j = 0; j < i; ++j) seen |= op.inputs[j].id == id;
      n += !seen;
    }
    return n;
  }
  std::size_t new_inputs(const ExprBuilder& o) const {
    std::size_t n = 0;
    for (const TensorIr& t : o.expr.inputs) n += input_of(t.id) < 0;
    return n;
  }

  void add(const OpIr& op) {
    if (expr.nodes.empty()) expr.shape = op.outputs[0].shape;
    // Tensor operands in order (fusable ops have at most 3); fused_node_of places a scalar
    // operand on its side.
    FusedOperand operands[3];
    for (std::size_t i = 0; i < op.inputs.size(); ++i) operands[i] = operand_for(op.inputs[i]);
    expr.nodes.push_back(fused_node_of(op, std::span<const FusedOperand>(operands, op.inputs.size())));
    expr.nodes.back().shape = expr.shape;  // an op past a reshape node iterates the group's shape
    entity_of_node_.push_back(op.outputs[0]);
    killed_.push_back(false);
  }

  // A reshape of one of the expression's values: an identity node whose value is written, when
  // it lives, with the reshape's shape. Every value of a group lies contiguous in the order of
  // its element index, so a reshape changes no element's place, only how later ops name it.
  void add_reshape(const OpIr& op) {
    FusedNode node;
    node.kind = OpKind::cast;  // to its own dtype: the identity every device's fused code knows
    node.out = node.compute = op.outputs[0].dtype;
    node.attrs.dtype = op.outputs[0].dtype;
    node.shape = expr.shape;
    node.arity = 1;
    node.operands[0] = operand_for(op.inputs[0]);
    expr.nodes.push_back(std::move(node));
    entity_of_node_.push_back(op.outputs[0]);
    killed_.push_back(false);
  }

  // Takes in `o`, independent of this one: its nodes follow, an input both read counts once.
  void merge(ExprBuilder&& o) {
    std::vector<std::uint32_t> input_map(o.expr.inputs.size());
    for (std::size_t k = 0; k < input_map.size(); ++k) {
      int index = input_of(o.expr.inputs[k].id);
      if (index < 0) {
        index = static_cast<int>(expr.inputs.size());
        expr.inputs.push_back(o.expr.inputs[k]);
      }
      input_map[k] = static_cast<std::uint32_t>(index);
    }
    const auto base = static_cast<std::uint32_t>(expr.nodes.size());
    for (FusedNode n : o.expr.nodes) {
      for (int j = 0; j < n.arity; ++j) {
        FusedOperand& op = n.operands[j];
        if (op.kind == FusedOperand::Kind::input) op.index = input_map[op.index];
        else if (op.kind == FusedOperand::Kind::node) op.index += base;
      }
      expr.nodes.push_back(std::move(n));
    }
    entity_of_node_.insert(entity_of_node_.end(), o.entity_of_node_.begin(), o.entity_of_node_.end());
    killed_.insert(killed_.end(), o.killed_.begin(), o.killed_.end());
  }

  // The node making `id` dies (nobody outside needs it); false when no node makes it.
  bool kill(EntityId id) {
    const int n = node_of(id);
    if (n >= 0) killed_[static_cast<std::size_t>(n)] = true;
    return n >= 0;
  }
  bool killed(int node) const { return killed_[static_cast<std::size_t>(node)]; }
  bool all_killed() const { return std::find(killed_.begin(), killed_.end(), false) == killed_.end(); }

  // The finished expression: the nodes still alive (and `forced`, when >= 0) become outputs.
  // Nodes that no output needs are left out, and so are inputs that only they read (but never
  // the first `kept_inputs`: a tail's input 0 is its anchor's value): a value that died
  // unread, a chain whose end was dropped, costs nothing. Without this, 200 dropped GELUs of
  // one input submitted without a sync became 128-op kernels of ~25 GELUs each, whose
  // structures changed with where the groups were cut: on a GPU a compile each.
  FusedExpr close(int forced = -1, std::size_t kept_inputs = 0) {
    const std::size_t n_nodes = expr.nodes.size();
    std::vector<bool> live(n_nodes, false);
    for (std::size_t n = 0; n < n_nodes; ++n) live[n] = !killed_[n] || static_cast<int>(n) == forced;
    for (std::size_t n = n_nodes; n-- > 0;)
      if (live[n])
        for (int j = 0; j < expr.nodes[n].arity; ++j)
          if (expr.nodes[n].operands[j].kind == FusedOperand::Kind::node) live[expr.nodes[n].operands[j].index] = true;
    std::vector<bool> read(expr.inputs.size(), false);
    for (std::size_t k = 0; k < std::min(kept_inputs, read.size()); ++k) read[k] = true;
    for (std::size_t n = 0; n < n_nodes; ++n)
      if (live[n])
        for (int j = 0; j < expr.nodes[n].arity; ++j)
          if (expr.nodes[n].operands[j].kind == FusedOperand::Kind::input) read[expr.nodes[n].operands[j].index] = true;
    FusedExpr out;
    out.shape = expr.shape;
    std::vector<std::uint32_t> input_index(expr.inputs.size()), node_index(n_nodes);
    for (std::size_t k = 0; k < expr.inputs.size(); ++k) {
      if (!read[k]) continue;
      input_index[k] = static_cast<std::uint32_t>(out.inputs.size());
      out.inputs.push_back(std::move(expr.inputs[k]));
    }
    for (std::size_t n = 0; n < n_nodes; ++n) {
      if (!live[n]) continue;
      FusedNode node = std::move(expr.nodes[n]);
      for (int j = 0; j < node.arity; ++j) {
        FusedOperand& op = node.operands[j];
        if (op.kind == FusedOperand::Kind::input) op.index = input_index[op.index];
        else if (op.kind == FusedOperand::Kind::node) op.index = node_index[op.index];
      }
      node_index[n] = static_cast<std::uint32_t>(out.nodes.size());
      out.nodes.push_back(std::move(node));
      if (killed_[n] && static_cast<int>(n) != forced) continue;
      out.output_nodes.push_back(node_index[n]);
      TensorIr value = entity_of_node_[n];
      value.status = TensorStatus::NotInit;
      out.outputs.push_back(value);
    }
    return out;
  }

 private:
  FusedOperand operand_for(const TensorIr& t) {
    if (const int n = node_of(t.id); n >= 0) return {FusedOperand::Kind::node, static_cast<std::uint32_t>(n)};
    if (const int k = input_of(t.id); k >= 0) return {FusedOperand::Kind::input, static_cast<std::uint32_t>(k)};
    const auto index = static_cast<std::uint32_t>(expr.inputs.size());
    expr.inputs.push_back(t);
    expr.inputs.back().status = TensorStatus::ReadOnly;
    // An input that broadcasts nothing is read at the element's own index, whatever its shape
    // (it may name the elements as a reshape past the anchor does): give it the group's shape.
    if (t.numel() == expr.shape.numel()) expr.inputs.back().shape = expr.shape;
    return {FusedOperand::Kind::input, index};
  }

  std::vector<TensorIr> entity_of_node_;
  std::vector<bool> killed_;
};

// What a closed group becomes: a fused kernel, or its members run one by one.
struct ClosedPart {
  bool fused = false;
  FusedGroup group;
};

// The group being built while the planner walks the batch: elementwise ops (`body_`), and
// perhaps an anchor (a reduction or matmul) with the elementwise ops on its result (`tail_`,
// whose input 0 is the anchor's result).
class OpenGroup {
 public:
  bool anchored() const { return anchored_; }
  // The shape the group's next ops must have.
  const Shape& shape() const { return anchored_ ? anchor_.outputs[0].shape : body_.expr.shape; }

  bool produces(EntityId id) const {
    return body_.produces(id) || (anchored_ && (id == anchor_.outputs[0].id || tail_.produces(id)));
  }
  bool reads(EntityId id) const {
    if (body_.reads(id)) return true;
    if (!anchored_) return false;
    if (tail_.input_of(id) > 0) return true;
    for (const TensorIr& t : anchor_.inputs)
      if (t.id == id && !body_.produces(id)) return true;
    return false;
  }
  bool touches(EntityId id) const { return produces(id) || reads(id); }

  // Whether the elementwise op, which uses this group's entities, can join it.
  bool accepts(const OpIr& op) const {
    if (op.outputs[0].shape != shape() && !past_reshape(op)) return false;
    const ExprBuilder& part = anchored_ ? tail_ : body_;
    if (part.node_count() + body_.node_count() * anchored_ >= FusionPlanner::kMaxNodes) return false;
    if (part.input_count() + part.new_inputs(op) > FusionPlanner::kMaxInputs) return false;
    // After the anchor, values of the body are out of reach: they exist only as the anchor
    // reads them.
    if (anchored_)
      for (const TensorIr& t : op.inputs)
        if (body_.produces(t.id)) return false;
    return true;
  }

  void add(const OpIr& op, std::uint32_t batch_index) {
    (anchored_ ? tail_ : body_).add(op);
    end_handed_over(op);
    members_.push_back(batch_index);
  }

  // Whether `op`, a reshape, can join the anchor's epilogue: it reshapes the anchor's value or
  // one the epilogue makes. (A convolution on a device without a conv kernel is a matmul whose
  // product is reshaped to [N, K, *spatial]; the activation after it then still joins.) Not in
  // a prologue: a reduction's geometry is its operand's shape.
  bool accepts_reshape(const OpIr& op) const {
    if (!anchored_) return false;
    const EntityId id = op.inputs[0].id;
    if (id != anchor_.outputs[0].id && !tail_.produces(id)) return false;
    return tail_.node_count() + body_.node_count() + 1 < FusionPlanner::kMaxNodes;
  }
  void add_reshape(const OpIr& op, std::uint32_t batch_index) {
    tail_.add_reshape(op);
    end_handed_over(op);
    members_.push_back(batch_index);
  }

  // Whether `op` (a reduction) can take the body as its prologue: it reads one of the body's
  // values and nothing else of it.
  bool can_anchor(const OpIr& op) const {
    return !anchored_ && !body_.empty() && anchors_prologue(op) && body_.produces(op.inputs[0].id);
  }

  // The reduction or matmul becomes the group's anchor (the group may be empty: no prologue).
  void anchor(const OpIr& op, std::uint32_t batch_index) {
    anchored_ = true;
    anchor_ = op;
    anchor_.completion.reset();
    anchor_member_ = members_.size();
    consumed_before_anchor_ = consumed_.size();
    tail_.expr.shape = op.outputs[0].shape;
    TensorIr result = op.outputs[0];
    result.status = TensorStatus::ReadOnly;
    tail_.expr.inputs.push_back(result);
    end_handed_over(op);
    members_.push_back(batch_index);
  }

  // Takes in `o`, an open group of the same shape that is independent of this one (open groups
  // never read each other's values); neither is anchored. The members stay in batch order (an
  // unfused replay runs them in that order).
  void merge(OpenGroup&& o) {
    body_.merge(std::move(o.body_));
    for (EntityId id : o.consumed_)
      if (std::find(consumed_.begin(), consumed_.end(), id) == consumed_.end()) consumed_.push_back(id);
    std::vector<std::uint32_t> members;
    std::merge(members_.begin(), members_.end(), o.members_.begin(), o.members_.end(), std::back_inserter(members));
    members_ = std::move(members);
  }
  std::size_t node_count() const { return body_.node_count(); }
  std::size_t input_count() const { return body_.input_count(); }
  std::size_t new_inputs(const OpenGroup& o) const { return body_.new_inputs(o.body_); }

  // A drop of an entity the group touches: swallowed, replayed only if the group runs unfused.
  void absorb_drop(EntityId id, std::uint32_t batch_index) {
    end_entity(id);
    members_.push_back(batch_index);
  }

  // Finishes the group. The entities still alive become outputs. An anchored group is one
  // kernel when nothing but the anchor needs the body's values (the body is its prologue);
  // otherwise the body runs first as its own kernel, writing the anchor's operand.
  void close(std::span<const OpIr> batch, std::vector<ClosedPart>& parts) {
    batch_ = &batch;
    if (!anchored_) {
      parts.push_back(part(body_.close(), 0, members_.size(), 0, consumed_.size()));
      return;
    }
    const int operand = body_.node_of(anchor_.inputs[0].id);
    FusedExpr tail = tail_.close(-1, 1);
    if (operand >= 0 && body_.all_killed() && tail.nodes.size() + body_.node_count() < FusionPlanner::kMaxNodes) {
      FusedAnchor& a = tail.anchor.emplace_back();
      a.op = std::move(anchor_);
      a.prologue.push_back(body_.close(operand));
      a.keep_result = !result_dead_;
      ClosedPart p = part(std::move(tail), 0, members_.size(), 0, consumed_.size());
      p.fused = true;
      parts.push_back(std::move(p));
      return;
    }
    if (!body_.empty()) {
      const bool operand_dead = operand >= 0 && body_.killed(operand);
      parts.push_back(part(body_.close(operand), 0, anchor_member_, 0, consumed_before_anchor_));
      // The anchor's operand now lives in memory until the anchor's part ends it.
      if (operand_dead) consumed_.push_back(anchor_.inputs[0].id);
    }
    const bool has_epilogue = !tail.nodes.empty();
    FusedAnchor& a = tail.anchor.emplace_back();
    a.op = std::move(anchor_);
    a.keep_result = !result_dead_;
    ClosedPart p = part(std::move(tail), anchor_member_, members_.size(), consumed_before_anchor_, consumed_.size());
    p.fused = has_epilogue;
    parts.push_back(std::move(p));
  }

 private:
  // Members [m0, m1) and consumed entities [c0, c1) as one part; fused when it holds two ops.
  ClosedPart part(FusedExpr expr, std::size_t m0, std::size_t m1, std::size_t c0, std::size_t c1) const {
    ClosedPart p;
    p.group.expr = std::move(expr);
    p.group.members.assign(members_.begin() + static_cast<std::ptrdiff_t>(m0), members_.begin() + static_cast<std::ptrdiff_t>(m1));
    p.group.consumed.assign(consumed_.begin() + static_cast<std::ptrdiff_t>(c0), consumed_.begin() + static_cast<std::ptrdiff_t>(c1));
    for (std::size_t m = m0; m < m1; ++m) p.group.op_count += (*batch_)[members_[m]].kind != OpKind::drop;
    p.fused = p.group.op_count >= 2;
    return p;
  }

  void end_handed_over(const OpIr& op) {
    for (const TensorIr& t : op.inputs)
      if (t.status == TensorStatus::ReadWrite) end_entity(t.id);
  }

  // An entity ends here: made inside, it never reaches memory (unless the anchor needs it);
  // read from outside, its buffer may take an output.
  void end_entity(EntityId id) {
    if (body_.kill(id)) return;
    if (anchored_ && id == anchor_.outputs[0].id) {
      result_dead_ = true;
      return;
    }
    if (anchored_ && tail_.kill(id)) return;
    if (reads(id) && std::find(consumed_.begin(), consumed_.end(), id) == consumed_.end()) consumed_.push_back(id);
  }

  // An elementwise op of another shape than the epilogue's, with the same element count and
  // operands that broadcast nothing: it works on values reshaped past the anchor, element by
  // element at the same index.
  bool past_reshape(const OpIr& op) const {
    const std::int64_t n = shape().numel();
    if (!anchored_ || op.outputs[0].numel() != n) return false;
    for (const TensorIr& t : op.inputs)
      if (t.numel() != n) return false;
    return true;
  }

  ExprBuilder body_;
  bool anchored_ = false;
  OpIr anchor_;
  bool result_dead_ = false;
  ExprBuilder tail_;
  std::vector<std::uint32_t> members_;  // batch indices, in order (drops included)
  std::vector<EntityId> consumed_;      // external inputs ended inside the group
  std::size_t anchor_member_ = 0, consumed_before_anchor_ = 0;
  const std::span<const OpIr>* batch_ = nullptr;  // while closing
};

const char* cut_reason(const OpIr& op, const OpenGroup& g) {
  if (op.kind == OpKind::read) return "a read flushes";
  if (op.kind == OpKind::sync) return "a sync flushes";
  if (!is_fusable(op)) return "a non-elementwise op uses the group's values";
  if (op.outputs[0].shape != g.shape()) return "the output shape changes";
  if (g.anchored()) return "the op needs a value before the anchor, or the group is full";
  return "the group is full";
}

// Whether `op` reads or makes anything of `g`.
bool connected(const OpIr& op, const OpenGroup& g) {
  for (const TensorIr& t : op.inputs)
    if (g.touches(t.id)) return true;
  return false;
}

}  // namespace

// Several groups of one shape stay open at once, one per connected set of ops: independent
// chains that arrive interleaved (two threads computing two modules' gradients) each become
// their own group, so a group's structure does not depend on how the threads happened to
// interleave — otherwise every new interleaving would be a new kernel to compile. Open groups never read
// each other's values (an op that does joins or closes them), so they may run in any order,
// each where it closes.
void FusionPlanner::plan(std::span<const OpIr> batch, bool fusion_enabled, Plan& out) {
  out.steps.clear();
  out.groups.clear();
  std::vector<OpenGroup> open;  // oldest first
  std::vector<std::size_t> hit;
  std::vector<ClosedPart> parts;
  // Ops that ran ahead of the open groups (they touch none of their entities).
  auto emit_op = [&](std::uint32_t i) { out.steps.push_back(PlanStep{false, i}); };
  auto close = [&](std::size_t g, const char* reason) {
    parts.clear();
    open[g].close(batch, parts);
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(g));
    for (ClosedPart& p : parts) {
      if (!p.fused) {
        // One op is not worth a fused kernel: run it (and any drop it swallowed) as it came.
        for (std::uint32_t m : p.group.members) emit_op(m);
        continue;
      }
      if (log_enabled(spdlog::level::debug) && p.group.expr.outputs.empty() && !p.group.expr.anchored()) {
        logger().debug("fusion: {} ops, every value dropped unread: nothing to compute; cut: {}", p.group.op_count, reason);
      } else if (log_enabled(spdlog::level::debug)) {
        const FusedArgLayout buffers = fused_arg_layout(p.group.expr);
        logger().debug("fusion: {} ops -> 1 kernel, {} input(s), {} output(s) [{}]; cut: {}", p.group.op_count,
                       buffers.inputs, buffers.outputs, p.group.expr.describe(), reason);
      }
      out.steps.push_back(PlanStep{true, static_cast<std::uint32_t>(out.groups.size())});
      out.groups.push_back(std::move(p.group));
    }
  };
  // Closes the groups listed in `hit` (ascending), newest first so the indices stay valid;
  // they are independent, so their order does not matter.
  auto close_hit = [&](const char* reason) {
    for (std::size_t k = hit.size(); k-- > 0;) close(hit[k], reason);
  };
  // Groups whose values `op` reads or whose inputs it hands over (reading an input is harmless).
  auto find_related = [&](const OpIr& op, bool flush) {
    hit.clear();
    for (std::size_t g = 0; g < open.size(); ++g) {
      bool related = flush;
      for (const TensorIr& t : op.inputs)
        related |= open[g].produces(t.id) || (open[g].reads(t.id) && t.status == TensorStatus::ReadWrite);
      if (related) hit.push_back(g);
    }
  };
  // Makes room for a new group of `shape`. Groups of another shape close: the work moved on
  // (to the next layer, say), and a group kept open keeps its inputs alive (checkpointed
  // backward passes count on that).
  auto make_room = [&](const Shape& shape) {
    for (std::size_t g = open.size(); g-- > 0;)
      if (open[g].shape() != shape) close(g, "the output shape changes");
    if (open.size() >= kMaxOpenGroups) close(0, "too many open groups");
    open.emplace_back();
  };

  for (std::uint32_t i = 0; i < batch.size(); ++i) {
    const OpIr& op = batch[i];
    if (!fusion_enabled) {
      emit_op(i);
      continue;
    }
    hit.clear();
    if (op.kind == OpKind::drop) {
      for (std::size_t g = 0; g < open.size(); ++g)
        if (open[g].touches(op.inputs[0].id)) hit.push_back(g);
      if (hit.size() == 1) {
        open[hit[0]].absorb_drop(op.inputs[0].id, i);
        continue;
      }
      close_hit("a value two groups use is dropped");
      emit_op(i);
      continue;
    }
    if (is_fusable(op) && op.inputs.size() <= kMaxInputs) {
      for (std::size_t g = 0; g < open.size(); ++g)
        if (connected(op, open[g])) hit.push_back(g);
      if (hit.size() > 1) {
        // The op uses values of several groups: they become one (when they fit together).
        std::size_t nodes = 0, inputs = open[hit[0]].input_count();
        bool mergeable = true;
        for (std::size_t g : hit) {
          nodes += open[g].node_count();
          mergeable &= !open[g].anchored() && open[g].shape() == open[hit[0]].shape();
          if (g != hit[0]) inputs += open[hit[0]].new_inputs(open[g]);
        }
        if (mergeable && nodes < kMaxNodes && inputs <= kMaxInputs) {
          for (std::size_t k = hit.size(); k-- > 1;) {
            open[hit[0]].merge(std::move(open[hit[k]]));
            open.erase(open.begin() + static_cast<std::ptrdiff_t>(hit[k]));
          }
          hit.erase(hit.begin() + 1, hit.end());
        }
      }
      if (hit.size() == 1 && open[hit[0]].accepts(op)) {
        open[hit[0]].add(op, i);
        continue;
      }
      // Joins two groups, or does not fit its own: those close, and the op starts a new group.
      if (!hit.empty()) close_hit(hit.size() > 1 ? "an op joins two groups" : cut_reason(op, open[hit[0]]));
      make_room(op.outputs[0].shape);
      open.back().add(op, i);
      continue;
    }
    if (anchors_epilogue(op)) {
      // A reduction or matmul: it takes the group that makes its operand as its prologue, or
      // starts a group of its own that its epilogue joins.
      for (std::size_t g = 0; g < open.size(); ++g)
        if (connected(op, open[g])) hit.push_back(g);
      if (hit.size() == 1 && open[hit[0]].can_anchor(op)) {
        open[hit[0]].anchor(op, i);
        continue;
      }
      find_related(op, false);
      if (!hit.empty()) close_hit("a reduction or matmul uses the group's values");
      make_room(op.outputs[0].shape);
      open.back().anchor(op, i);
      continue;
    }
    if (op.kind == OpKind::reshape) {
      for (std::size_t g = 0; g < open.size(); ++g)
        if (connected(op, open[g])) hit.push_back(g);
      if (hit.size() == 1 && open[hit[0]].accepts_reshape(op)) {
        open[hit[0]].add_reshape(op, i);
        continue;
      }
      hit.clear();
    }
    // Reads and syncs flush; other ops close the groups whose values they use or whose inputs
    // they consume in place.
    find_related(op, op.kind == OpKind::read || op.kind == OpKind::sync);
    if (!hit.empty()) close_hit(cut_reason(op, open[hit[0]]));
    emit_op(i);
  }
  while (!open.empty()) close(0, "end of the batch");
}

}  // namespace kiln
