// The submission path every op function goes through: run the op's shape rule on the caller's
// thread, decide each input's status from ownership, build the message, push it onto the
// device's stream and return the output handles at once.
#pragma once
#include <memory>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln {

namespace detail {

// autograd/ defines these; the engine only carries them. A tensor that takes part in a backward
// graph has an AutogradMeta; the hooks below record ops on such tensors. engine/ never includes
// autograd/: the hooks are installed by autograd the first time a tensor is made to require
// gradients.
struct AutogradMeta;
class GradNode;

struct TensorState {
  EntityId id = 0;
  Shape shape;
  DType dtype = DType::f32;
  Device device;
  bool consumed = false;  // an op took this entity over (ReadWrite): no drop message needed
  // Set on a second handle to an entity that `owner` holds (autograd's graph handles): this
  // handle sends no drop (it is `consumed`), and it is handed over (ReadWrite) only when it and
  // the owner are both the last of their kind. `owner` never has an owner itself.
  std::shared_ptr<TensorState> owner;
  std::shared_ptr<AutogradMeta> autograd;  // null unless the tensor takes part in a backward graph
  TensorState(EntityId i, const Shape& s, DType t, Device d) : id(i), shape(s), dtype(t), device(d) {}
  ~TensorState();
};

// Recording ops for autograd. `begin` runs when some input carries autograd meta, after the
// shape rule and before the in-place decision, so that an input it saves (by copying the
// handle) is never written in place; it returns null when the op is not recorded (no-grad
// mode, a non-differentiable op). `finish` runs once the message is on its stream and gives
// the outputs their place in the graph (it may replace the output handles).
struct AutogradHooks {
  std::shared_ptr<GradNode> (*begin)(const OpIr& op, const TensorList& outputs, const Tensor* inputs);
  void (*finish)(const std::shared_ptr<GradNode>& node, Tensor* outputs, std::size_t n_outputs);
};
// Installs the hooks (autograd does it once; later calls with the same table are no-ops).
void install_autograd_hooks(const AutogradHooks* hooks);

// The forward pass this thread is recording (engine/recorded_pass.cpp), or null. While it is
// set, the submission paths below append their messages to it instead of the device's stream.
struct PassRecorder;
PassRecorder* recording_pass();

// Checks and submits one op. `inputs` are taken by value: an input whose handle is the last
// one becomes ReadWrite. Creation ops (no inputs) run on `device`.
std::vector<Tensor> submit(OpKind kind, Tensor* inputs, std::size_t n_inputs, OpAttrs attrs, Device device);
Tensor submit0(OpKind kind, OpAttrs attrs, Device device);
Tensor submit1(OpKind kind, Tensor a, OpAttrs attrs = {});
Tensor submit2(OpKind kind, Tensor a, Tensor b, OpAttrs attrs = {});
Tensor submit3(OpKind kind, Tensor a, Tensor b, Tensor c, OpAttrs attrs = {});
// `bytes`: the tensor's values, shape.numel() of dtype, owned by what the pointer keeps alive.
Tensor submit_upload(std::shared_ptr<const std::byte> bytes, const Shape& shape, DType dtype, Device device);
inline Tensor submit_upload(const std::shared_ptr<const std::vector<std::byte>>& bytes, const Shape& shape, DType dtype,
                            Device device) {
  return submit_upload(std::shared_ptr<const std::byte>(bytes, bytes->data()), shape, dtype, device);
}

}  // namespace detail

}  // namespace kiln
