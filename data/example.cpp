// The examples are copied once, straight into the byte buffers the uploads take over (the path
// from_vector takes after its own copy), so a batch costs one memcpy per example and tensor.
#include "kiln/data/example.h"

#include <cstring>
#include <memory>
#include <string>

#include "kiln/engine/bytes.h"

namespace kiln::data {

namespace {

constexpr const char* kStackOp = "stack_examples";

using Bytes = std::vector<std::byte>;

std::string describe(const Example& e) {
  return "shape " + e.shape.str() + ", " + std::to_string(e.features.size()) + " values, " +
         (e.label >= 0 ? "label " + std::to_string(e.label) : std::string("no label")) + ", " +
         std::to_string(e.target.size()) + " target values";
}

void check_agrees(const std::vector<Example>& examples, std::size_t i) {
  const Example& first = examples.front();
  const Example& e = examples[i];
  const bool same =
      e.shape == first.shape && (e.label >= 0) == (first.label >= 0) && e.target.size() == first.target.size();
  KILN_CHECK(same, kStackOp,
             "example " + std::to_string(i) + " (" + describe(e) + ") differs from example 0 (" + describe(first) +
                 "); a batch needs examples of one shape, all labelled or none, and targets of one length");
  KILN_CHECK(static_cast<std::int64_t>(e.features.size()) == e.shape.numel(), kStackOp,
             "example " + std::to_string(i) + " has " + std::to_string(e.features.size()) + " values, but its shape " +
                 e.shape.str() + " holds " + std::to_string(e.shape.numel()));
}

template <class T, class Get>
Tensor upload(const std::vector<Example>& examples, std::size_t per_example, const Shape& shape, DType dtype,
              Device device, Get values_of) {
  auto bytes = std::make_shared<Bytes>(examples.size() * per_example * sizeof(T));
  std::byte* out = bytes->data();
  for (const Example& e : examples) {
    const T* values = values_of(e);
    if (per_example) std::memcpy(out, values, per_example * sizeof(T));
    out += per_example * sizeof(T);
  }
  return from_bytes(std::move(bytes), shape, dtype, device);
}

}  // namespace

Batch stack_examples(const std::vector<Example>& examples, Device device) {
  KILN_CHECK(!examples.empty(), kStackOp, "no examples to stack");
  KILN_CHECK(examples.front().shape.rank() < kMaxRank, kStackOp,
             "examples of rank " + std::to_string(examples.front().shape.rank()) + " leave no room for the batch " +
                 "dimension (kiln tensors have at most " + std::to_string(kMaxRank) + " dimensions)");
  for (std::size_t i = 0; i < examples.size(); ++i) check_agrees(examples, i);

  const Example& first = examples.front();
  const auto count = static_cast<std::int64_t>(examples.size());
  Batch batch;
  Shape input_shape = first.shape;
  input_shape.insert(0, count);
  batch.inputs = upload<float>(examples, first.features.size(), input_shape, DType::f32, device,
                               [](const Example& e) { return e.features.data(); });
  if (first.label >= 0)
    batch.labels =
        upload<std::int64_t>(examples, 1, Shape{count}, DType::i64, device, [](const Example& e) { return &e.label; });
  if (!first.target.empty()) {
    const auto width = static_cast<std::int64_t>(first.target.size());
    batch.targets = upload<float>(examples, first.target.size(), Shape{count, width}, DType::f32, device,
                                  [](const Example& e) { return e.target.data(); });
  }
  return batch;
}

}  // namespace kiln::data
