// kiln::onnx: ONNX models loaded at run time as kiln modules.
//
//   onnx::Model m = onnx::load("resnet18.onnx");      // or onnx::load_from_bytes(bytes)
//   m.eval();
//   Tensor logits = m(x);                               // one input, one output
//   auto outs = m.forward({{"input_ids", ids}});        // by name: {output name -> tensor}
//
// The graph runs with kiln's public ops, so it runs on every device, fuses, records and takes
// gradients: floating initializers are the module's trainable parameters, named as in the file
// (state_dict() names = initializer names, so io::save_model and the optimizers work on it);
// BatchNormalization's running statistics are buffers. Shape arithmetic (Shape, Gather, Concat,
// Unsqueeze... on shape tensors) is evaluated on the host. Files are untrusted: anything wrong
// is a kiln::Error naming the file, the node, its op type and what is wrong.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::onnx {

namespace detail {
struct Graph;
}

// What the loader does not run: an op type, an opset, a non-tensor value, or a setting of an op
// (a 3-D pooling). `what()` names the file or node; feature() is the short form ("LSTM").
class UnsupportedError : public Error {
 public:
  UnsupportedError(const std::string& op, const std::string& message, std::string feature)
      : Error("onnx", message), feature_(std::move(feature)) {}
  const std::string& feature() const { return feature_; }

 private:
  std::string feature_;
};

// A graph input or output: its name, element type and dims (-1 where the file names the dim,
// as in "batch", or leaves it open: such a dim takes its size from the input at run time).
struct ValueInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> dims;
  std::vector<std::string> dim_names;  // "" for fixed dims
  bool has_shape = false;              // false: the file says nothing of the shape
};

class Model final : public nn::Module {
 public:
  Model() = default;
  explicit Model(std::shared_ptr<const detail::Graph> graph);

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  std::int64_t opset() const;                 // of the default ("ai.onnx") domain
  const std::string& source() const;          // the file (or "<bytes>"), for messages
  std::vector<std::string> op_types() const;  // the distinct op types of its nodes, sorted

  // Inputs in the graph's input order; outputs in the graph's output order.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) const;
  // Inputs by name (every graph input once); outputs by name.
  std::map<std::string, Tensor> forward(const std::map<std::string, Tensor>& inputs) const;
  // A model of one input and one output.
  Tensor forward(const Tensor& x) const;
  template <class... A>
  auto operator()(A&&... a) const -> decltype(forward(std::forward<A>(a)...)) {
    return forward(std::forward<A>(a)...);
  }

  // Writes the model as an ONNX file: the graph it was loaded from with the current values of
  // its parameters and buffers (after fine-tuning, io::load_model...), every initializer inline.
  // Another runtime (ONNX Runtime) runs the result. The file is replaced only once complete.
  void save(const std::filesystem::path& path) const;

  // A copy on `device` (the graph is shared), and a deep copy.
  Model to(Device device) const;
  Model clone() const;

  const char* type_name() const override { return "OnnxModel"; }
  void visit_fields(nn::FieldVisitor& v) override;
  std::unique_ptr<nn::Module> copy_module() const override { return std::make_unique<Model>(*this); }
  std::string describe() const override;

 private:
  std::shared_ptr<const detail::Graph> graph_;
  // Initializers, in file order: trainable parameters and buffers (BatchNormalization's running
  // statistics, integer tensors), by name.
  std::vector<std::string> parameter_names_, buffer_names_;
  std::vector<nn::Parameter> parameters_;
  std::vector<nn::Buffer> buffers_;
};

// Loads an ONNX file, in eval mode (train() for fine-tuning); external data files are read
// relative to its folder.
Model load(const std::filesystem::path& path);
// Loads a serialized ModelProto; external data (if any) relative to base_dir.
Model load_from_bytes(std::span<const std::byte> bytes, const std::filesystem::path& base_dir = {},
                      const std::string& source = "<bytes>");

// A serialized TensorProto file (the ONNX test data's input_0.pb): its name and value.
nn::NamedTensor load_tensor(const std::filesystem::path& path, Device device = Device::cpu());

// Writes `value` as a serialized TensorProto named `name` (f32, f16 and bf16 as float, i64, bool).
void save_tensor(const std::filesystem::path& path, const std::string& name, const Tensor& value);

// The op types (default domain) the loader runs, sorted.
std::vector<std::string> supported_op_types();
// Opsets of the default domain the loader accepts.
inline constexpr std::int64_t kMinOpset = 7;
inline constexpr std::int64_t kMaxOpset = 17;

}  // namespace kiln::onnx
