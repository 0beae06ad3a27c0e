// Example and Batch: the item most datasets hold (an input's values with a class label or a
// dense target) and the tensors a loader hands the model. stack_examples is the Batcher that
// turns one into the other: the one place where host data becomes device tensors, one upload per
// tensor per batch.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln::data {

struct Example {
  std::vector<float> features{};  // the input's values, row-major in `shape`
  Shape shape{};                  // [C, H, W] for an image, [n] for a table row
  std::int64_t label = -1;        // a class index; -1: none
  std::vector<float> target{};    // a dense target (one-hot, regression values); empty: none
};

struct Batch {
  Tensor inputs;   // [B, ...shape], f32
  Tensor labels;   // [B], i64; undefined when the examples have no label
  Tensor targets;  // [B, T], f32; undefined when the examples have no dense target
  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

// Stacks examples into a Batch on `device`. They must agree: the same shape, all labelled or
// none, targets of one length or none; otherwise a kiln::Error names the first that differs.
Batch stack_examples(const std::vector<Example>& examples, Device device = Device::cpu());

}  // namespace kiln::data
