// Whether KILN_MODULE's list reaches every tensor a module holds: a Parameter, Buffer or
// sub-module left out of the list is missing from state_dict(), to(), clone() and every
// optimizer step, without a word.
//
// Why a run-time check: C++20 cannot enumerate a class's members. Modules are not aggregates
// (a vtable, constructors, private settings), so neither structured bindings nor brace-counting
// see their fields, and no sizeof rule tells a forgotten 16-byte Parameter from two doubles of
// settings: a compile-time rule would refuse correct layers or make every setting be listed.
//
// What it does instead: the module is built alone (its only owner), its state_dict (what the
// list reaches) is kept, and the module is dropped. Device memory that goes back to the pool
// with it belonged to a tensor the list does not reach. It needs no help from the module, catches
// parameters whether or not forward uses them, and buffers and sub-modules too. It cannot see a
// left-out field that holds no tensor yet (an undefined Parameter): nothing is lost then.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kiln/engine/kiln.h"
#include "kiln/nn/module.h"

namespace kiln::test {

// `make()` returns a new module on the CPU. Call it before any forward pass: a layer may keep a
// derived tensor of its own after one (Linear's transposed weight, made for inference).
template <class Make> ::testing::AssertionResult every_tensor_field_listed(Make&& make) {
  const auto bytes_in_use = [] {
    sync(Device::cpu()).get();
    return memory_stats(Device::cpu()).bytes_in_use;
  };
  std::string type;
  std::vector<nn::NamedTensor> state;
  std::size_t with_module = 0;
  {
    auto module = std::forward<Make>(make)();
    type = module.type_name();
    state = module.state_dict();
    with_module = bytes_in_use();
  }
  const std::size_t without_module = bytes_in_use();
  if (without_module >= with_module) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << type << " held " << with_module - without_module
                                       << " bytes of tensors that its KILN_MODULE list does not reach (a Parameter, "
                                          "Buffer or module field left out of the list?)";
}

}  // namespace kiln::test
