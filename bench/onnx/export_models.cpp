// The models onnx::export_model writes, for ONNX Runtime to run (bench/onnx/export_check.sh):
// the main job's CNN (examples/fashion_mnist_model.h, batch norm in eval with running
// statistics from a training-mode pass), an MLP and a transformer encoder layer, each exported
// with a dynamic batch, beside kiln's own output on the twin's check input (ort_twin.cpp:
// x[i] = ((i * 37) % 101) / 101 - 0.5) as a TensorProto.
//
//   kiln_onnx_export_models OUT_DIR   -> OUT_DIR/<name>.onnx, <name>.expected.pb; one line per
//                                        model on stdout: "<name> <input shape, comma-separated>"
#include <cstdio>
#include <filesystem>

#include "examples/fashion_mnist_model.h"
#include "kiln/kiln.h"

namespace {

using namespace kiln;

struct Mlp : nn::Module {
  nn::Linear fc1{784, 256}, fc2{256, 64}, fc3{64, 10};
  Tensor forward(const Tensor& x) const { return log_softmax(fc3(tanh(fc2(gelu(fc1(x))))), -1); }
  KILN_MODULE(Mlp, fc1, fc2, fc3)
};

Tensor check_input(const Shape& shape) {
  std::vector<float> x(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(((i * 37) % 101) / 101.0 - 0.5);
  return from_vector(x, shape);
}

template <class M>
void write(const std::filesystem::path& dir, const std::string& name, const M& m, const Shape& shape) {
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  onnx::export_model(
      m, [&](const Tensor& x) { return m.forward(x); }, shape, dir / (name + ".onnx"), o);
  onnx::save_tensor(dir / (name + ".expected.pb"), "output", m.forward(check_input(shape)));
  std::string dims;
  for (std::int64_t d : shape) {
    if (!dims.empty()) dims += ',';
    dims += std::to_string(d);
  }
  std::printf("%s %s\n", name.c_str(), dims.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln_onnx_export_models OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  manual_seed(0);
  Mlp mlp;
  write(dir, "mlp", mlp, {4, 784});
  SmallCNN cnn;
  cnn.train();
  cnn.forward(randn({16, 1, 28, 28}));  // running statistics that are not 0 and 1
  cnn.eval();
  write(dir, "cnn", cnn, {4, 1, 28, 28});
  nn::TransformerEncoderLayer encoder(
      64, 4, {.dim_feedforward = 128, .activation = nn::TransformerActivation::gelu, .batch_first = true});
  encoder.eval();
  write(dir, "encoder", encoder, {2, 16, 64});
  return 0;
}
