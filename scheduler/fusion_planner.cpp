#include "scheduler/fusion_planner.h"

#include <algorithm>
#include <iterator>

#include "ops/elementwise_rules.h"
#include "ops/log.h"
#include "ops/registry.h"

namespace kiln {

bool is_fusable(const OpIr& op) {
  const OpFamily f = op_info(op.kind).family;
  if (f != OpFamily::unary && f != OpFamily::binary && f != OpFamily::ternary) return false;
  if (op.outputs.size() != 1 || op.inputs.size() > 3) return false;
  for (const TensorIr& t : op.inputs)
    if (t.dtype == DType::f16 || t.dtype == DType::bf16) return false;
  return op.outputs[0].dtype != DType::f16 && op.outputs[0].dtype != DType::bf16;
}

namespace {

// The group being built while the planner walks the batch.
class OpenGroup {
 public:
  bool empty() const { return group_.expr.nodes.empty(); }
  const Shape& shape() const { return group_.expr.shape; }
  std::size_t node_count() const { return group_.expr.nodes.size(); }
  std::size_t input_count() const { return group_.expr.inputs.size(); }

  bool produces(EntityId id) const { return node_of(id) >= 0; }
  bool reads(EntityId id) const { return input_of(id) >= 0; }
  bool touches(EntityId id) const { return produces(id) || reads(id); }

  // Inputs the op would add to the group (to respect kMaxInputs before adding it).
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

  void add(const OpIr& op, std::uint32_t batch_index) {
    FusedExpr& e = group_.expr;
    if (e.nodes.empty()) e.shape = op.outputs[0].shape;
    // Tensor operands in order (fusable ops have at most 3); fused_node_of places a scalar
    // operand on its side.
    FusedOperand operands[3];
    for (std::size_t i = 0; i < op.inputs.size(); ++i) operands[i] = operand_for(op.inputs[i]);
    e.nodes.push_back(fused_node_of(op, std::span<const FusedOperand>(operands, op.inputs.size())));
    entity_of_node_.push_back(op.outputs[0]);
    killed_.push_back(false);
    // A handed-over input ends here: made inside, it never reaches memory; made outside, its
    // buffer may take an output.
    for (const TensorIr& t : op.inputs)
      if (t.status == TensorStatus::ReadWrite) end_entity(t.id);
    group_.members.push_back(batch_index);
    ++group_.op_count;
  }

  // Takes in `o`, an open group of the same shape that is independent of this one (open groups
  // never read each other's values): its nodes follow this group's, an input both read counts
  // once, and the members stay in batch order (an unfused replay runs them in that order).
  void merge(OpenGroup&& o) {
    FusedExpr& e = group_.expr;
    std::vector<std::uint32_t> input_map(o.group_.expr.inputs.size());
    for (std::size_t k = 0; k < input_map.size(); ++k) {
      const TensorIr& t = o.group_.expr.inputs[k];
      int index = input_of(t.id);
      if (index < 0) {
        index = static_cast<int>(e.inputs.size());
        e.inputs.push_back(t);
      }
      input_map[k] = static_cast<std::uint32_t>(index);
    }
    const auto base = static_cast<std::uint32_t>(e.nodes.size());
    for (FusedNode n : o.group_.expr.nodes) {
      for (int j = 0; j < n.arity; ++j) {
        FusedOperand& op = n.operands[j];
        if (op.kind == FusedOperand::Kind::input) op.index = input_map[op.index];
        else if (op.kind == FusedOperand::Kind::node) op.index += base;
      }
      e.nodes.push_back(std::move(n));
    }
    entity_of_node_.insert(entity_of_node_.end(), o.entity_of_node_.begin(), o.entity_of_node_.end());
    killed_.insert(killed_.end(), o.killed_.begin(), o.killed_.end());
    for (EntityId id : o.group_.consumed)
      if (std::find(group_.consumed.begin(), group_.consumed.end(), id) == group_.consumed.end())
        group_.consumed.push_back(id);
    std::vector<std::uint32_t> members;
    std::merge(group_.members.begin(), group_.members.end(), o.group_.members.begin(), o.group_.members.end(),
               std::back_inserter(members));
    group_.members = std::move(members);
    group_.op_count += o.group_.op_count;
  }

  // Inputs `o` would add to this group.
  std::size_t new_inputs(const OpenGroup& o) const {
    std::size_t n = 0;
    for (const TensorIr& t : o.group_.expr.inputs) n += input_of(t.id) < 0;
    return n;
  }

  // A drop of an entity the group touches: swallowed, replayed only if the group runs unfused.
  void absorb_drop(EntityId id, std::uint32_t batch_index) {
    end_entity(id);
    group_.members.push_back(batch_index);
  }

  // Finishes the group: the entities still alive become its outputs.
  FusedGroup close() {
    FusedExpr& e = group_.expr;
    for (std::uint32_t n = 0; n < e.nodes.size(); ++n) {
      if (killed_[n]) continue;
      e.output_nodes.push_back(n);
      TensorIr out = entity_of_node_[n];
      out.status = TensorStatus::NotInit;
      e.outputs.push_back(out);
    }
    FusedGroup g = std::move(group_);
    *this = OpenGroup();
    return g;
  }

 private:
  // Linear searches, newest first: a group holds at most kMaxNodes nodes and kMaxInputs inputs,
  // and in a chain the operand is almost always the node just added. Cheaper than hash maps
  // rebuilt for every group (the planner runs on every flush).
  int node_of(EntityId id) const {
    for (std::size_t n = entity_of_node_.size(); n-- > 0;)
      if (entity_of_node_[n].id == id) return static_cast<int>(n);
    return -1;
  }
  int input_of(EntityId id) const {
    const std::vector<TensorIr>& in = group_.expr.inputs;
    for (std::size_t k = 0; k < in.size(); ++k)
      if (in[k].id == id) return static_cast<int>(k);
    return -1;
  }

  FusedOperand operand_for(const TensorIr& t) {
    if (const int n = node_of(t.id); n >= 0) return {FusedOperand::Kind::node, static_cast<std::uint32_t>(n)};
    if (const int k = input_of(t.id); k >= 0) return {FusedOperand::Kind::input, static_cast<std::uint32_t>(k)};
    const auto index = static_cast<std::uint32_t>(group_.expr.inputs.size());
    group_.expr.inputs.push_back(t);
    group_.expr.inputs.back().status = TensorStatus::ReadOnly;
    return {FusedOperand::Kind::input, index};
  }

  void end_entity(EntityId id) {
    if (const int n = node_of(id); n >= 0) {
      killed_[static_cast<std::size_t>(n)] = true;
    } else if (reads(id) && std::find(group_.consumed.begin(), group_.consumed.end(), id) == group_.consumed.end()) {
      group_.consumed.push_back(id);
    }
  }

  FusedGroup group_;
  std::vector<TensorIr> entity_of_node_;  // the entity each node makes
  std::vector<bool> killed_;
};

const char* cut_reason(const OpIr& op, const OpenGroup& g) {
  if (op.kind == OpKind::read) return "a read flushes";
  if (op.kind == OpKind::sync) return "a sync flushes";
  if (!is_fusable(op)) return "a non-elementwise op uses the group's values";
  if (op.outputs[0].shape != g.shape()) return "the output shape changes";
  return "the group is full";
}

// Whether `op` reads or makes anything of `g`.
bool connected(const OpIr& op, const OpenGroup& g) {
  for (const TensorIr& t : op.inputs)
    if (g.touches(t.id)) return true;
  return false;
}

bool fits(const OpIr& op, const OpenGroup& g) {
  return op.outputs[0].shape == g.shape() && g.node_count() < FusionPlanner::kMaxNodes &&
         g.input_count() + g.new_inputs(op) <= FusionPlanner::kMaxInputs;
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
  // Ops that ran ahead of the open groups (they touch none of their entities).
  auto emit_op = [&](std::uint32_t i) { out.steps.push_back(PlanStep{false, i}); };
  auto close = [&](std::size_t g, const char* reason) {
    FusedGroup group = open[g].close();
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(g));
    if (group.op_count == 1) {
      // One op is not worth a fused kernel: run it (and any drop it swallowed) as it came.
      for (std::uint32_t m : group.members) emit_op(m);
      return;
    }
    if (log_enabled(spdlog::level::debug))
      logger().debug("fusion: {} ops -> 1 kernel, {} input(s), {} output(s) [{}]; cut: {}", group.op_count,
                     group.expr.inputs.size(), group.expr.outputs.size(), group.expr.describe(), reason);
    out.steps.push_back(PlanStep{true, static_cast<std::uint32_t>(out.groups.size())});
    out.groups.push_back(std::move(group));
  };
  // Closes the groups listed in `hit` (ascending), newest first so the indices stay valid;
  // they are independent, so their order does not matter.
  auto close_hit = [&](const char* reason) {
    for (std::size_t k = hit.size(); k-- > 0;) close(hit[k], reason);
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
        bool same_shape = true;
        for (std::size_t g : hit) {
          nodes += open[g].node_count();
          same_shape &= open[g].shape() == open[hit[0]].shape();
          if (g != hit[0]) inputs += open[hit[0]].new_inputs(open[g]);
        }
        if (same_shape && nodes < kMaxNodes && inputs <= kMaxInputs) {
          for (std::size_t k = hit.size(); k-- > 1;) {
            open[hit[0]].merge(std::move(open[hit[k]]));
            open.erase(open.begin() + static_cast<std::ptrdiff_t>(hit[k]));
          }
          hit.erase(hit.begin() + 1, hit.end());
        }
      }
      if (hit.size() == 1 && fits(op, open[hit[0]])) {
        open[hit[0]].add(op, i);
        continue;
      }
      // Joins two groups, or does not fit its own: those close, and the op starts a new group.
      if (!hit.empty()) close_hit(hit.size() > 1 ? "an op joins two groups" : cut_reason(op, open[hit[0]]));
      // Groups of another shape close as well: the work moved on (to the next layer, say), and
      // a group kept open keeps its inputs alive (checkpointed backward passes count on that).
      for (std::size_t g = open.size(); g-- > 0;)
        if (open[g].shape() != op.outputs[0].shape) close(g, "the output shape changes");
      if (open.size() >= kMaxOpenGroups) close(0, "too many open groups");
      open.emplace_back();
      open.back().add(op, i);
      continue;
    }
    // Reads and syncs flush; other ops close the groups whose values they use or whose inputs
    // they consume in place (reading a group's input is harmless).
    const bool flush = op.kind == OpKind::read || op.kind == OpKind::sync;
    for (std::size_t g = 0; g < open.size(); ++g) {
      bool related = flush;
      for (const TensorIr& t : op.inputs)
        related |= open[g].produces(t.id) || (open[g].reads(t.id) && t.status == TensorStatus::ReadWrite);
      if (related) hit.push_back(g);
    }
    if (!hit.empty()) close_hit(cut_reason(op, open[hit[0]]));
    emit_op(i);
  }
  while (!open.empty()) close(0, "end of the batch");
}

}  // namespace kiln
