// The fusion planner: turns a batch of pending op messages (in sequence order) into the steps
// the executor runs — single ops, and fused groups of elementwise ops that become one kernel.
// It knows no device: a group is a FusedExpr (ops/fused_expr.h) that any device can compile.
//
// Rules (why each holds is in fusion_planner.cpp):
//   - a group is a DAG of elementwise ops (unary, binary, where, clamp, cast) of one output shape;
//   - a group may take one reduction or matmul (its anchor): the elementwise ops before it become
//     the reduction's prologue when nothing but the reduction needs their values, and the
//     elementwise ops on the anchor's result (of its shape) become its epilogue; a reshape of
//     an epilogue value joins as an identity node, and elementwise ops on it that broadcast
//     nothing join too (a conv on a device without a conv kernel is a reshaped matmul);
//   - an entity made inside a group is written to memory only if it is still alive when the
//     group closes: a drop, or a member consuming it (ReadWrite), kills it first;
//   - an op that touches none of the group's entities may run before the group, so unrelated
//     work does not cut it; reads and syncs close it (a read flushes);
//   - every group keeps its original messages, so the executor can replay it unfused (used when
//     an input failed, so that errors propagate exactly as without fusion).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/ops/fused_expr.h"

namespace kiln {

class CompiledKernel;

struct FusedGroup {
  FusedExpr expr;  // with expr.anchor when the group wraps a reduction or matmul
  std::vector<std::uint32_t> members;  // batch indices, in order (drops it swallowed included)
  // External inputs whose entity ends with the group: a member consumed them, or they were
  // dropped while the group was open. They may lend their buffer to an output.
  std::vector<EntityId> consumed;
  std::uint32_t op_count = 0;  // members that are ops (not drops)
  // The kernel the executor compiled for `expr`, kept with the group so that a recorded plan
  // (scheduler/plan_cache.h) run again finds it without building its key; null when planned.
  const CompiledKernel* kernel = nullptr;
};

struct PlanStep {
  bool fused = false;
  std::uint32_t index = 0;  // batch index of a single op, or index into Plan::groups
};

struct Plan {
  std::vector<PlanStep> steps;
  std::vector<FusedGroup> groups;
};

class FusionPlanner {
 public:
  // Largest group: bounds the kernel's size and its compile time on GPUs.
  static constexpr std::size_t kMaxNodes = 128;
  static constexpr std::size_t kMaxInputs = 16;
  // Groups open at once (independent chains interleaved in one batch); more close the oldest.
  static constexpr std::size_t kMaxOpenGroups = 4;

  // Plans `batch`; with fusion off every op is its own step.
  void plan(std::span<const OpIr> batch, bool fusion_enabled, Plan& out);
};

// True for ops the planner may put in a group.
bool is_fusable(const OpIr& op);

}  // namespace kiln
