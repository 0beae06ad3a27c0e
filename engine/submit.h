// The submission path every op function goes through: run the op's shape rule on the caller's
// thread, decide each input's status from ownership, build the message, push it onto the
// device's stream and return the output handles at once.
#pragma once
#include <memory>
#include <vector>

#include "engine/tensor.h"

namespace kiln {

namespace detail {

struct TensorState {
  EntityId id = 0;
  Shape shape;
  DType dtype = DType::f32;
  Device device;
  bool consumed = false;  // an op took this entity over (ReadWrite): no drop message needed
  TensorState(EntityId i, const Shape& s, DType t, Device d) : id(i), shape(s), dtype(t), device(d) {}
  ~TensorState();
};

// Checks and submits one op. `inputs` are taken by value: an input whose handle is the last
// one becomes ReadWrite. Creation ops (no inputs) run on `device`.
std::vector<Tensor> submit(OpKind kind, Tensor* inputs, std::size_t n_inputs, OpAttrs attrs, Device device);
Tensor submit0(OpKind kind, OpAttrs attrs, Device device);
Tensor submit1(OpKind kind, Tensor a, OpAttrs attrs = {});
Tensor submit2(OpKind kind, Tensor a, Tensor b, OpAttrs attrs = {});
Tensor submit3(OpKind kind, Tensor a, Tensor b, Tensor c, OpAttrs attrs = {});
Tensor submit_upload(std::shared_ptr<const std::vector<std::byte>> bytes, const Shape& shape, DType dtype, Device device);

}  // namespace detail

}  // namespace kiln
