// The recording side of RecordedPass (engine/recorded_pass.h), for the submission paths
// (engine/submit.cpp): while a thread records a pass, its messages go into the pass instead of
// the device's stream.
#pragma once
#include <memory>
#include <unordered_set>
#include <vector>

#include "kiln/engine/submit.h"

namespace kiln::detail {

struct PassRecorder {
  Device device;
  std::shared_ptr<RecordedOps> pass;
  std::unordered_set<EntityId> made;                    // entities the pass's messages make
  std::unordered_set<EntityId> kept;                    // entities from outside it, kept in pass->outside
  std::vector<std::weak_ptr<TensorState>> made_states;  // to find those that outlive the call

  // A kiln::Error naming `op` when it is on another device than the pass.
  void check_device(Device d, const char* op) const;
  bool made_inside(EntityId id) const { return made.count(id) != 0; }
  // An entity from outside the pass that its messages read: alive as long as the pass.
  void keep_outside(const std::shared_ptr<TensorState>& s);
  void made_here(const std::shared_ptr<TensorState>& s);
  void add(OpIr&& op) { pass->ops.push_back(std::move(op)); }
};

// Sets (or, with null, clears) this thread's recorder.
void set_recording_pass(PassRecorder* recorder);

}  // namespace kiln::detail
