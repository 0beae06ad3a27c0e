// The states of several optimizers (or schedules) in the one optim::State a checkpoint holds for
// each kind: every part's tensors and numbers under "<name>/" (a full-control step's
// "generator/exp_avg.fc1.weight"). The Learner's own optimizer and schedule, when it has them,
// keep their names unprefixed, as checkpoints always held them.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "kiln/optim/state.h"

namespace kiln::train {

// Adds `part` to `merged` under "<name>/".
void add_named_state(optim::State& merged, const std::string& name, const optim::State& part);
// The part of `merged` under "<name>/", prefix removed.
optim::State named_state(const optim::State& merged, const std::string& name);
// What `merged` holds outside every "<name>/" part: the Learner's own state.
optim::State unnamed_state(const optim::State& merged, const std::vector<std::string>& names);
// Throws kiln::Error unless `name` may name a part: not empty, no '/', not among `taken`.
void check_state_name(const std::string& name, const std::vector<std::string>& taken);

}  // namespace kiln::train
