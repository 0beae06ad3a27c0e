// A forward pass recorded once and run after that as one message, as CUDA graphs replay recorded
// work: a served model's request submits its input, one replay and a read, instead of a message
// per op, and the executor runs the pass's plan, made at the first replay, without planning or
// looking it up again.
//
//   auto pass = kiln::RecordedPass::record([&](const Tensor& x) { return model(x); }, {1, 784});
//   std::vector<float> y = pass(kiln::from_vector(input, {1, 784})).to_vector<float>().get();
//
// What a pass may do: any ops on its input and on tensors from outside it (the weights), on one
// device, without gradients. What it may not: read values (to_vector, item, sync), keep a tensor
// it made beyond the call (a cache filled inside it; record() runs the function once first, so
// that caches such as nn::Linear's transposed weight are filled outside the recording), or take
// gradients. Each is a kiln::Error from record().
//
// A replay reads the weights the pass saw when it was recorded: after the model's parameters
// are replaced (load_state_dict, an optimizer step), record it again. Random ops draw the same
// values at every replay. A pass is a RecordedFunction (engine/recorded_function.h) of one input
// and one output, without gradients.
#pragma once
#include <functional>

#include "kiln/engine/recorded_function.h"

namespace kiln {

class RecordedPass {
 public:
  // Runs `forward` once on zeros of `shape` (filling caches, compiling kernels), then records
  // it on a stand-in input of that shape and dtype, without running anything.
  static RecordedPass record(const std::function<Tensor(const Tensor&)>& forward, const Shape& shape,
                             DType dtype = DType::f32, Device device = Device::cpu());

  // The pass on `x` (of the recorded shape, dtype and device), submitted as one message; from
  // any thread, as an op is.
  Tensor operator()(const Tensor& x) const;

  const Shape& input_shape() const { return function_.inputs()[0].shape; }
  const Shape& output_shape() const { return function_.outputs()[0].shape; }
  // Messages the pass holds (ops and the drops between them).
  std::size_t size() const { return function_.size(); }
  // Its ops as a graph, read-only (engine/recorded_graph.h): onnx::export_model writes it.
  RecordedGraph graph() const;

 private:
  explicit RecordedPass(RecordedFunction f) : function_(std::move(f)) {}
  RecordedFunction function_;
};

}  // namespace kiln
