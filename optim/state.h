// What an optimizer or a learning-rate scheduler must keep to resume where it stopped: named
// tensors (an optimizer's moments, one per parameter path, "exp_avg.fc1.weight") and named
// numbers (step counts, the last learning rate). A plain value: io/ writes it to a safetensors
// file (tensors as tensors, numbers in the header's metadata) and reads it back.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::optim {

struct State {
  std::vector<nn::NamedTensor> tensors;
  std::map<std::string, double> numbers;

  bool empty() const { return tensors.empty() && numbers.empty(); }
};

}  // namespace kiln::optim
