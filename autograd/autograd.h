// kiln autograd: reverse-mode gradients for kiln tensors. Include it next to engine/kiln.h.
//
//   require_grad(t)   — a handle to t that records the ops it takes part in (a leaf)
//   backward(loss)    — a Gradients value: leaf -> gradient; parameters are never mutated
//   Gradients         — get / contains / += / take: sum gradients, split them per module
//   NoGradGuard, detach, checkpoint, CheckpointScope — control what is recorded and kept
//
// Backward rules are written with kiln's own tensor ops, so backward is asynchronous like the
// forward pass: it returns at once, fuses, and runs on the tensors' device. A graph belongs to
// the thread that built it; graphs built on different threads share nothing, so each thread
// can compute gradients on its own batch and the Gradients values can be summed afterwards.
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln {

// A handle to t's entity (no copy of its values) that requires gradients: ops on it are
// recorded. The gradient of this leaf is keyed by the entity, so Gradients::get answers for t
// and for every other handle to the same entity. t itself is not changed. Only f32 tensors
// can require gradients. A leaf is returned as it is; a tensor made by recorded ops gives a
// new leaf (its graph is cut, as with detach).
Tensor require_grad(const Tensor& t);
// True when ops on t are recorded (a leaf, or made by recorded ops from one).
bool requires_grad(const Tensor& t);
bool is_leaf(const Tensor& t);  // requires gradients and was not made by a recorded op
// The same values (no copy), outside any graph.
Tensor detach(const Tensor& t);

// While one lives, ops on this thread are not recorded (inference, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
bool grad_enabled();  // false inside a NoGradGuard on this thread

// Gradients of one or more backward passes: leaf entity -> gradient tensor (f32, the leaf's
// shape). A value type: copies share the gradient tensors, which are never written in place.
class Gradients {
 public:
  bool contains(const Tensor& param) const;
  // The gradient of `param`; kiln::Error when param took no part in the backward passes.
  const Tensor& get(const Tensor& param) const;
  std::size_t size() const { return grads_.size(); }
  bool empty() const { return grads_.empty(); }

  // Adds other's gradients to these (asynchronous adds; entries only one side has are copied).
  Gradients& operator+=(const Gradients& other);
  // Moves the gradients of `params` out into a new Gradients value (kiln::Error, naming the
  // parameter, when one is missing; nothing is moved then).
  Gradients take(const std::vector<Tensor>& params);

  // Replaces the gradient of `param` (gradient clipping, scaling): a float tensor of its shape.
  void set(const Tensor& param, Tensor grad);

  // Adds `grad` to the gradient of entity `id` (used by backward; also handy for tests).
  void accumulate(EntityId id, Tensor grad);

 private:
  std::unordered_map<EntityId, Tensor> grads_;
};
Gradients operator+(Gradients a, const Gradients& b);

// Backward from a scalar (one element): the gradient of `loss` with respect to every leaf that
// took part. Returns at once; the gradient tensors fill in asynchronously. The saved values of
// the graph are freed as backward uses them, so a second backward over the same recorded ops is
// a kiln::Error (run the forward pass again). kiln::Error when loss does not require gradients.
Gradients backward(const Tensor& loss);
// Backward from any output, with `seed` the gradient of that output (same shape, f32).
Gradients backward(const Tensor& output, const Tensor& seed);

// Called during backward once a leaf's gradient is complete (every recorded use of the leaf has
// contributed), with the leaf's entity and its gradient (a handle whose values may still be
// computing). Data-parallel training starts reducing early gradients while backward goes on
// producing later ones. It runs on the thread that called backward, once per leaf that gets a
// gradient; a leaf that takes no part is never reported.
using GradientReadyHook = std::function<void(EntityId leaf, const Tensor& grad)>;
Gradients backward(const Tensor& loss, const GradientReadyHook& on_ready);

// What recorded ops keep for backward.
//   save_all               — every value a rule needs (the default)
//   recompute_memory_bound — outputs of elementwise and layout ops are replayed at backward from
//                            their inputs; matmul, reductions and index ops keep their values
//                            (Burn's "balanced" strategy: recompute what is cheap to recompute)
//   recompute_all          — nothing inside the region is kept; at backward the region is
//                            replayed from its inputs (what checkpoint() uses)
enum class CheckpointPolicy { save_all, recompute_memory_bound, recompute_all };

// Applies a policy to the ops recorded on this thread while it lives.
class CheckpointScope {
 public:
  explicit CheckpointScope(CheckpointPolicy policy);
  ~CheckpointScope();
  CheckpointScope(const CheckpointScope&) = delete;
  CheckpointScope& operator=(const CheckpointScope&) = delete;

 private:
  CheckpointPolicy previous_;
};

// Runs fn(inputs) as a checkpointed region: its intermediates are not kept; at backward the
// region is replayed from its inputs (and from the tensors fn captured), then its backward runs.
// Values are the same as without checkpointing; peak memory is lower.
std::vector<Tensor> checkpoint(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Tensor>& inputs);

// A differentiable function with a backward of its own (PyTorch's torch.autograd.Function): for
// what the op-by-op rules cannot express, such as a collective in the middle of backward.
// `forward` runs on the inputs without recording; its outputs join the graph as one node whose
// gradients come from `backward`. backward gets one gradient per output (zeros for an output
// that got none) and returns one per input, each of that input's shape, or an undefined tensor
// for an input that takes none; it runs without recording, on the thread that called
// kiln::backward, and may capture what forward computed (keep it in a shared_ptr). A wrong
// count or shape is a kiln::Error naming `name`. With gradients off (NoGradGuard) or no input
// requiring them, this is forward(inputs).
using CustomForward = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
using CustomBackward = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads_out)>;
std::vector<Tensor> custom_function(const std::vector<Tensor>& inputs, const CustomForward& forward,
                                    CustomBackward backward, const std::string& name);

}  // namespace kiln
