#include "scheduler/fusion_planner.h"

#include <algorithm>

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

}  // namespace

void FusionPlanner::plan(std::span<const OpIr> batch, bool fusion_enabled, Plan& out) {
  out.steps.clear();
  out.groups.clear();
  OpenGroup open;
  // Ops that ran ahead of the open group (they touch none of its entities).
  auto emit_op = [&](std::uint32_t i) { out.steps.push_back(PlanStep{false, i}); };
  auto close = [&](const char* reason) {
    if (open.empty()) return;
    FusedGroup g = open.close();
    if (g.op_count == 1) {
      // One op is not worth a fused kernel: run it (and any drop it swallowed) as it came.
      for (std::uint32_t m : g.members) emit_op(m);
      return;
    }
    if (log_enabled(spdlog::level::debug))
      logger().debug("fusion: {} ops -> 1 kernel, {} input(s), {} output(s) [{}]; cut: {}", g.op_count,
                     g.expr.inputs.size(), g.expr.outputs.size(), g.expr.describe(), reason);
    out.steps.push_back(PlanStep{true, static_cast<std::uint32_t>(out.groups.size())});
    out.groups.push_back(std::move(g));
  };

  for (std::uint32_t i = 0; i < batch.size(); ++i) {
    const OpIr& op = batch[i];
    if (!fusion_enabled) {
      emit_op(i);
      continue;
    }
    if (op.kind == OpKind::drop) {
      if (open.touches(op.inputs[0].id)) open.absorb_drop(op.inputs[0].id, i);
      else emit_op(i);
      continue;
    }
    const bool fits = is_fusable(op) && (open.empty() || (op.outputs[0].shape == open.shape() &&
                                                          open.node_count() < kMaxNodes &&
                                                          open.input_count() + open.new_inputs(op) <= kMaxInputs));
    if (fits && op.inputs.size() <= kMaxInputs) {
      open.add(op, i);
      continue;
    }
    bool related = op.kind == OpKind::read || op.kind == OpKind::sync;
    // Reading a group input is harmless; consuming it (in place) or using a group value is not.
    for (const TensorIr& t : op.inputs)
      related |= open.produces(t.id) || (open.reads(t.id) && t.status == TensorStatus::ReadWrite);
    if (is_fusable(op)) {
      // A fusable op that does not fit starts the next group.
      close(cut_reason(op, open));
      if (op.inputs.size() <= kMaxInputs) open.add(op, i);
      else emit_op(i);
      continue;
    }
    if (related) close(cut_reason(op, open));
    emit_op(i);
  }
  close("end of the batch");
}

}  // namespace kiln
