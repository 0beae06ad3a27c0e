// Backward rules: for every differentiable op, how the gradients of its outputs become the
// gradients of its inputs. Rules are written with kiln's public tensor ops, so backward is
// asynchronous, fuses, and runs on every device. One file per op family
// (autograd/rules_<family>.cpp), each filling the table for its ops.
#pragma once
#include <array>
#include <vector>

#include "kiln/engine/kiln.h"

namespace kiln::autograd {

// What a rule sees of the forward op. Inputs and outputs are kept only when the rule asks for
// them (saves_inputs / saves_outputs), so a rule that needs neither keeps no memory alive.
struct ForwardRecord {
  OpKind kind = OpKind::add;
  OpAttrs attrs;
  TensorList input_meta;   // shape and dtype of every input (ids unused)
  TensorList output_meta;  // shape and dtype of every output
  std::vector<Tensor> inputs;         // defined when the rule saves inputs
  std::vector<Tensor> outputs;        // defined when the rule saves outputs
  // One per input: whether its gradient goes anywhere (it requires grad). A rule may skip the
  // gradient of an input that takes none, as PyTorch's needs_input_grad lets it: the first
  // layer's dX = dY·Wᵀ of a model is as costly as its dW and is thrown away. Empty: all do.
  std::vector<bool> input_needs_grad;
  bool needs_grad(std::size_t input) const { return input_needs_grad.empty() || input_needs_grad[input]; }
};

// grads_out[i]: the gradient of forward output i (undefined when it got none; rules may then
// treat it as zeros or return nothing). Returns one gradient per forward input, each of that
// input's shape and a floating dtype; undefined for inputs that take no gradient (integer or
// bool inputs, indices, masks).
using BackwardFn = std::vector<Tensor> (*)(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out);

struct BackwardRule {
  BackwardFn fn = nullptr;  // nullptr: the op is not differentiable (comparisons, argmax, ...)
  bool saves_inputs = false;
  bool saves_outputs = false;
};

class RuleTable {
 public:
  void set(OpKind k, BackwardRule r) { rules_[static_cast<std::size_t>(k)] = r; }
  const BackwardRule& operator[](OpKind k) const { return rules_[static_cast<std::size_t>(k)]; }

 private:
  std::array<BackwardRule, kOpCount> rules_{};
};

// The table of every family's rules, built once.
const RuleTable& backward_rules();

void register_elementwise_rules(RuleTable& t);
void register_reduce_rules(RuleTable& t);
void register_linalg_rules(RuleTable& t);
void register_layout_rules(RuleTable& t);
void register_index_rules(RuleTable& t);
void register_conv_rules(RuleTable& t);
void register_pool_rules(RuleTable& t);
void register_norm_rules(RuleTable& t);

// Shared helpers for rules.
// Sums `grad` over the dims that broadcasting added or expanded, back to `shape`.
Tensor sum_to(Tensor grad, const Shape& shape);

}  // namespace kiln::autograd
