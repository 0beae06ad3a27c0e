// The recording side of RecordedFunction (engine/recorded_function.h), for the submission paths
// (engine/submit.cpp): while a thread records, its messages go into the recording instead of the
// device's stream.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/engine/creation.h"
#include "kiln/engine/submit.h"

namespace kiln::detail {

struct PassRecorder {
  Device device;
  std::shared_ptr<RecordedOps> pass;
  // Whether ops on tensors that require gradients may be recorded (a training step's backward
  // is ops like any other); a forward pass (RecordedPass) says no, to point at NoGradGuard.
  bool gradients = false;
  std::unordered_set<EntityId> made;                    // entities the pass makes, its stand-ins included
  std::unordered_set<EntityId> kept;                    // entities from outside it, kept in pass->outside
  std::vector<std::weak_ptr<TensorState>> made_states;  // to find those that outlive the call
  std::vector<std::weak_ptr<TensorState>> stand_ins;    // the inputs' and host inputs', in order
  // RedrawnSeeds scopes, in the order they opened, each with the random ops submitted under it
  // (their outputs); the innermost open one takes the next random op.
  struct SeedScope {
    std::function<Generator()> make;
    std::vector<EntityId> ops;
  };
  std::vector<SeedScope> seed_scopes;
  std::vector<std::size_t> open_seed_scopes;
  std::size_t fixed_random_ops = 0;  // random ops under no scope
  std::string first_fixed_random_op;

  // A kiln::Error naming `op` when it is on another device than the pass.
  void check_device(Device d, const char* op) const;
  bool made_inside(EntityId id) const { return made.count(id) != 0; }
  // An entity from outside the pass that its messages read: alive as long as the pass.
  void keep_outside(const std::shared_ptr<TensorState>& s);
  void made_here(const std::shared_ptr<TensorState>& s);
  // A tensor whose values each replay brings (an input or a host input): made by no message.
  Tensor stand_in(const Shape& shape, DType dtype);
  // A random op (its message, before it is added): its seed is redrawn at each replay, or fixed.
  void random_op(const OpIr& op);
  void add(OpIr&& op) { pass->ops.push_back(std::move(op)); }
};

// Sets (or, with null, clears) this thread's recorder.
void set_recording_pass(PassRecorder* recorder);

}  // namespace kiln::detail
