// Export: a kiln forward pass written as an ONNX file (opset 17) that other runtimes (ONNX
// Runtime) run, so that a model trained in kiln can leave it.
//
//   model.eval();
//   onnx::export_model(model, [&](const Tensor& x) { return model(x); }, {1, 1, 28, 28}, "cnn.onnx",
//                      {.dynamic_batch = true});
//   // or a pass already recorded: onnx::export_model(pass, "cnn.onnx");
//
// What is written is the recorded pass (engine/recorded_pass.h): the primitive ops the forward
// submitted, each as one ONNX node or a few (a layer norm is its mean, variance and scale, as
// kiln runs it), the weights as initializers named by the module's state_dict() paths, the input
// and output named as the options say. An op with no ONNX equivalent (a random op: dropout in
// training mode, batch norm in training mode, atan2, unfold...) is a kiln::Error naming the op and
// its shapes; nothing is written then.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kiln/engine/recorded_pass.h"
#include "kiln/nn/module.h"

namespace kiln::onnx {

struct ExportOptions {
  std::string input_name = "input";
  std::string output_name = "output";
  // Dim 0 of the input (and of every value it flows into) becomes the symbolic dim "batch":
  // reshapes keep it (0 or -1 in their shape). Ops that mix it with other dims (a permute that
  // moves it, a reduction over it) are a kiln::Error then: export with a fixed batch instead.
  bool dynamic_batch = false;
  // Names of the weights, matched by tensor (a module's state_dict(): "fc1.weight"); weights
  // without one are called "const_N".
  std::vector<nn::NamedTensor> weight_names;
  std::string graph_name = "kiln";
};

// The ModelProto, serialized (onnx::load_from_bytes reads it back).
std::vector<std::byte> export_to_bytes(const RecordedPass& pass, const ExportOptions& options = {});
// Written next to `path` and renamed over it once complete.
void export_model(const RecordedPass& pass, const std::filesystem::path& path, const ExportOptions& options = {});

// Records `forward` on an f32 input of `input_shape` on `device` (the module's), without
// gradients, and exports it; the module's state_dict() names the weights (added to
// options.weight_names). Call module.eval() first: dropout and batch norm in training mode are
// errors.
std::vector<std::byte> export_to_bytes(const nn::Module& module, const std::function<Tensor(const Tensor&)>& forward,
                                       const Shape& input_shape, ExportOptions options = {},
                                       Device device = Device::cpu());
void export_model(const nn::Module& module, const std::function<Tensor(const Tensor&)>& forward,
                  const Shape& input_shape, const std::filesystem::path& path, ExportOptions options = {},
                  Device device = Device::cpu());

}  // namespace kiln::onnx
