// A module's parameters and buffers with write access, by state_dict path: what loading a weight
// file needs to set them. Built on nn::FieldVisitor, so it sees exactly the tensors (and the
// paths) that Module::state_dict() lists.
#pragma once
#include <string>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::io::detail {

struct ModuleSlot {
  std::string path{};
  nn::Parameter* parameter = nullptr;  // one of the two is set
  nn::Buffer* buffer = nullptr;
  Tensor value{};  // the current value (its shape, dtype and device are what a load must match)

  void set(const Tensor& v) const {
    if (parameter)
      parameter->set(v);  // keeps trainable()
    else
      buffer->set(v);  // for every copy that shares the buffer, like a forward pass
  }
};

// The defined parameters and buffers of `m`, in state_dict order. The pointers stay valid while
// the module is not restructured.
std::vector<ModuleSlot> module_slots(nn::Module& m);

}  // namespace kiln::io::detail
