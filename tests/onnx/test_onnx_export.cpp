// onnx::export_model: kiln modules written as ONNX files and read back by kiln's importer (which
// the ONNX backend node tests check), outputs against the module's own; names, dynamic batch,
// the checker of Debian's python3-onnx, and the errors of ops ONNX cannot hold. ONNX Runtime
// runs the same exports in bench/onnx/export_check.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "examples/fashion_mnist_model.h"
#include "kiln/engine/recorded_graph.h"
#include "kiln/kiln.h"
#include "tests/onnx/export_cases.h"
#include "tests/support/reference.h"
#include "tests/support/scratch_dir.h"

namespace kiln::test {
namespace {

Tensor input(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen);
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_vector<float>().get(), y = b.to_vector<float>().get();
  float d = x.size() == y.size() ? 0.0f : INFINITY;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

// Exports, reads the bytes back with kiln's importer and compares outputs at each input shape.
template <class M>
onnx::Model roundtrip(const M& m, const std::vector<Shape>& shapes, const onnx::ExportOptions& options = {}) {
  const auto forward = [&](const Tensor& x) { return m.forward(x); };
  const std::vector<std::byte> bytes = onnx::export_to_bytes(m, forward, shapes[0], options);
  onnx::Model loaded = onnx::load_from_bytes(bytes);
  loaded.eval();
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const Tensor x = input(shapes[k], 7 + k);
    EXPECT_LE(max_abs_diff(loaded(x), m.forward(x)), 1e-5f) << "input " << shapes[k].str();
  }
  return loaded;
}

TEST(OnnxExport, MlpMatchesTheModuleWithNamesFromItsStateDict) {
  ExportMlp m(20, 32, 10);
  const onnx::Model loaded = roundtrip(m, {{3, 20}});
  ASSERT_EQ(loaded.inputs().size(), 1u);
  EXPECT_EQ(loaded.inputs()[0].name, "input");
  EXPECT_EQ(loaded.outputs()[0].name, "output");
  EXPECT_EQ(loaded.inputs()[0].dims, (std::vector<std::int64_t>{3, 20}));
  EXPECT_EQ(loaded.opset(), 17);
  std::vector<std::string> names;
  for (const nn::NamedTensor& p : loaded.named_parameters()) names.push_back(p.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"}));
  // The weights are the module's values, not copies of other tensors.
  EXPECT_EQ(max_abs_diff(loaded.named_parameters()[2].tensor, m.fc2.weight.value()), 0.0f);
}

TEST(OnnxExport, RecordedPassExportsWithUnnamedWeights) {
  ExportMlp m(20, 32, 10);
  const NoGradGuard no_grad;
  const RecordedPass pass = RecordedPass::record([&](const Tensor& x) { return m.forward(x); }, {2, 20});
  const RecordedGraph graph = pass.graph();
  EXPECT_EQ(graph.outside.size(), 6u);  // the three layers' weights and biases
  EXPECT_EQ(graph.inputs[0].shape, Shape({2, 20}));
  onnx::Model loaded = onnx::load_from_bytes(onnx::export_to_bytes(pass));
  EXPECT_EQ(loaded.named_parameters()[0].name, "const_0");
  const Tensor x = input({2, 20}, 5);
  EXPECT_LE(max_abs_diff(loaded(x), pass(x)), 1e-5f);
}

TEST(OnnxExport, DynamicBatchRunsAtOtherBatchSizes) {
  ExportMlp m(20, 32, 10);
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  o.input_name = "x";
  o.output_name = "logits";
  const onnx::Model loaded = roundtrip(m, {{3, 20}, {1, 20}, {6, 20}}, o);
  EXPECT_EQ(loaded.inputs()[0].name, "x");
  EXPECT_EQ(loaded.inputs()[0].dim_names[0], "batch");
  EXPECT_EQ(loaded.outputs()[0].name, "logits");
  EXPECT_EQ(loaded.outputs()[0].dim_names[0], "batch");
}

TEST(OnnxExport, FashionMnistCnnWithBatchNormInEvalMatches) {
  SmallCNN m;
  m.train();
  m.forward(input({8, 1, 28, 28}, 3));  // running statistics that are not 0 and 1
  m.eval();
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  const onnx::Model loaded = roundtrip(m, {{2, 1, 28, 28}, {3, 1, 28, 28}}, o);
  std::vector<std::string> names;
  for (const nn::NamedTensor& t : loaded.state_dict()) names.push_back(t.name);
  for (const char* want : {"conv1.weight", "bn1.running_mean", "bn3.running_var", "fc2.bias"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(OnnxExport, PoolingCnnMatches) {
  PoolCnn m;
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  roundtrip(m, {{2, 1, 14, 14}, {4, 1, 14, 14}}, o);
}

TEST(OnnxExport, TransformerEncoderLayerMatches) {
  nn::TransformerEncoderLayer m = export_encoder(16, 4, 32);
  m.eval();
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  roundtrip(m, {{2, 5, 16}, {3, 5, 16}}, o);
}

TEST(OnnxExport, EveryMappedOpFamilyMatches) {
  OpZoo m;
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  roundtrip(m, {{2, 6, 8}, {3, 6, 8}}, o);
}

// A pass recorded on each device: its weights are read back from the device into the file.
class OnnxExportDevices : public ::testing::TestWithParam<Device> {};

TEST_P(OnnxExportDevices, ModuleOnTheDeviceMatches) {
  const Device device = GetParam();
  const ExportMlp m = ExportMlp(20, 32, 10).to(device);
  const auto forward = [&](const Tensor& x) { return m.forward(x); };
  onnx::Model loaded = onnx::load_from_bytes(onnx::export_to_bytes(m, forward, {3, 20}, {}, device));
  const Tensor x = input({3, 20}, 11);
  EXPECT_LE(max_abs_diff(loaded(x), to(m.forward(to(x, device)), Device::cpu())), 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Devices, OnnxExportDevices, ::testing::ValuesIn(test_devices()), device_param_name);

TEST(OnnxExport, ExportedFilesPassTheOnnxChecker) {
  if (std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import onnx (Debian package python3-onnx)";
  const ScratchDir dir("onnx_export");
  ExportMlp mlp(20, 32, 10);
  SmallCNN cnn;
  cnn.eval();
  nn::TransformerEncoderLayer enc = export_encoder(16, 4, 32);
  enc.eval();
  OpZoo zoo;
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  std::string command =
      "/usr/bin/python3 -c \"import onnx, sys\nfor p in sys.argv[1:]: "
      "onnx.checker.check_model(onnx.load(p), full_check=True)\"";
  const auto write = [&](const std::string& name, const nn::Module& m, const auto& forward, const Shape& shape) {
    onnx::export_model(m, forward, shape, dir.path() / name, o);
    command += " " + (dir.path() / name).string();
  };
  write("mlp.onnx", mlp, [&](const Tensor& x) { return mlp.forward(x); }, {2, 20});
  write("cnn.onnx", cnn, [&](const Tensor& x) { return cnn.forward(x); }, {2, 1, 28, 28});
  write("enc.onnx", enc, [&](const Tensor& x) { return enc.forward(x); }, {2, 5, 16});
  write("zoo.onnx", zoo, [&](const Tensor& x) { return zoo.forward(x); }, {2, 6, 8});
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(OnnxExport, OpWithoutAnOnnxEquivalentIsAClearError) {
  nn::Linear fc(3, 3);
  const auto forward = [&](const Tensor& x) { return atan2(fc(x), x); };
  try {
    onnx::export_to_bytes(fc, forward, {2, 3});
    FAIL() << "atan2 was exported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("atan2"), std::string::npos) << what;
    EXPECT_NE(what.find("f32[2, 3]"), std::string::npos) << what;
    EXPECT_NE(what.find("no ONNX equivalent"), std::string::npos) << what;
  }
}

TEST(OnnxExport, TrainingModeDropoutAsksForEval) {
  nn::Dropout drop({.p = 0.5});
  drop.train();
  try {
    onnx::export_to_bytes(drop, [&](const Tensor& x) { return drop.forward(x); }, {4, 8});
    FAIL() << "a random op was exported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("eval()"), std::string::npos) << e.what();
  }
}

TEST(OnnxExport, DynamicBatchRefusesAPermuteOfTheBatchDim) {
  nn::Linear fc(4, 4);
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  try {
    onnx::export_to_bytes(
        fc,
        [&](const Tensor& x) {
          return fc(permute(x, {1, 0, 2}));
        },
        {2, 3, 4}, o);
    FAIL() << "a permute of the batch dim was exported as dynamic";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dynamic_batch = false"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::test
