// The models onnx::export_model writes, for ONNX Runtime to run (bench/onnx/export_check.sh):
// the main job's CNN (examples/fashion_mnist_model.h, batch norm in eval with running
// statistics from a training-mode pass) and the export tests' models (tests/onnx/export_cases.h:
// an MLP, a pooling CNN, a transformer encoder layer, every mapped op family), each exported
// with a dynamic batch, beside kiln's own output on the twin's check input (ort_twin.cpp:
// x[i] = ((i * 37) % 101) / 101 - 0.5) as a TensorProto.
//
//   kiln_onnx_export_models OUT_DIR   -> OUT_DIR/<name>.onnx and <name>.b<batch>.pb at two batch
//       sizes; one line per check on stdout: "<name> <expected file> <input shape, comma-separated>"
#include <cstdio>
#include <filesystem>

#include "examples/fashion_mnist_model.h"
#include "kiln/kiln.h"
#include "tests/onnx/export_cases.h"

namespace {

using namespace kiln;
using namespace kiln::test;

Tensor check_input(const Shape& shape) {
  std::vector<float> x(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(((i * 37) % 101) / 101.0 - 0.5);
  return from_vector(x, shape);
}

std::string dims_str(const Shape& shape) {
  std::string dims;
  for (std::int64_t d : shape) {
    if (!dims.empty()) dims += ',';
    dims += std::to_string(d);
  }
  return dims;
}

// The file, and kiln's output at the recorded batch and at one more (the batch is dynamic).
template <class M>
void write(const std::filesystem::path& dir, const std::string& name, const M& m, const Shape& shape) {
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  onnx::export_model(
      m, [&](const Tensor& x) { return m.forward(x); }, shape, dir / (name + ".onnx"), o);
  Shape other = shape;
  other[0] += 1;
  for (const Shape& s : {shape, other}) {
    const std::string expected = name + ".b" + std::to_string(s[0]) + ".pb";
    onnx::save_tensor(dir / expected, "output", m.forward(check_input(s)));
    std::printf("%s %s %s\n", name.c_str(), expected.c_str(), dims_str(s).c_str());
  }
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
  const ExportMlp mlp(784, 256, 10);
  write(dir, "mlp", mlp, {4, 784});
  SmallCNN cnn;
  cnn.train();
  cnn.forward(randn({16, 1, 28, 28}));  // running statistics that are not 0 and 1
  cnn.eval();
  write(dir, "cnn", cnn, {4, 1, 28, 28});
  const PoolCnn pool_cnn;
  write(dir, "pool_cnn", pool_cnn, {4, 1, 14, 14});
  nn::TransformerEncoderLayer encoder = export_encoder(64, 4, 128);
  encoder.eval();
  write(dir, "encoder", encoder, {2, 16, 64});
  const OpZoo zoo;
  write(dir, "op_zoo", zoo, {2, 6, 8});
  return 0;
}
