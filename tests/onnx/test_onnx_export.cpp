// onnx::export_model: kiln modules written as ONNX files and read back by kiln's importer (which
// the ONNX backend node tests check), outputs against the module's own; names, dynamic batch,
// the checker of Debian's python3-onnx, and the errors of ops ONNX cannot hold. ONNX Runtime
// runs the same exports in bench/onnx/export_check.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "examples/fashion_mnist_model.h"
#include "kiln/kiln.h"
#include "tests/support/scratch_dir.h"

namespace kiln::test {
namespace {

struct Mlp : nn::Module {
  nn::Linear fc1{20, 32}, fc2{32, 16}, fc3{16, 10};
  Tensor forward(const Tensor& x) const { return log_softmax(fc3(tanh(fc2(gelu(fc1(x))))), -1); }
  KILN_MODULE(Mlp, fc1, fc2, fc3)
};

// Pooling, sigmoid, a bias-free convolution and softmax: what SmallCNN does not use.
struct PoolCnn : nn::Module {
  nn::Conv2d conv1{1, 4, {3}}, conv2{4, 6, {3}, {.padding = {1}, .bias = false}};
  nn::Linear fc{6 * 3 * 3, 5};
  Tensor forward(const Tensor& x) const {
    Tensor h = max_pool2d(relu(conv1(x)), {.kernel = {2}});                             // [N, 4, 6, 6]
    h = avg_pool2d(sigmoid(conv2(h)), {.kernel = {3}, .stride = {2}, .padding = {1}});  // [N, 6, 3, 3]
    return softmax(fc(flatten(h, 1)), 1);
  }
  KILN_MODULE(PoolCnn, conv1, conv2, fc)
};

// A post-norm encoder layer, batch first, with GELU; its dropout is off in eval().
nn::TransformerEncoderLayer encoder() {
  return nn::TransformerEncoderLayer(
      16, 4, {.dim_feedforward = 32, .activation = nn::TransformerActivation::gelu, .batch_first = true});
}

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
  Mlp m;
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

TEST(OnnxExport, DynamicBatchRunsAtOtherBatchSizes) {
  Mlp m;
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
  nn::TransformerEncoderLayer m = encoder();
  m.eval();
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  roundtrip(m, {{2, 5, 16}, {3, 5, 16}}, o);
}

TEST(OnnxExport, ExportedFilesPassTheOnnxChecker) {
  if (std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import onnx (Debian package python3-onnx)";
  const ScratchDir dir("onnx_export");
  Mlp mlp;
  SmallCNN cnn;
  cnn.eval();
  nn::TransformerEncoderLayer enc = encoder();
  enc.eval();
  onnx::ExportOptions o;
  o.dynamic_batch = true;
  onnx::export_model(
      mlp, [&](const Tensor& x) { return mlp.forward(x); }, {2, 20}, dir.path() / "mlp.onnx", o);
  onnx::export_model(
      cnn, [&](const Tensor& x) { return cnn.forward(x); }, {2, 1, 28, 28}, dir.path() / "cnn.onnx", o);
  onnx::export_model(
      enc, [&](const Tensor& x) { return enc.forward(x); }, {2, 5, 16}, dir.path() / "enc.onnx", o);
  const std::string command =
      "/usr/bin/python3 -c \"import onnx, sys\nfor p in sys.argv[1:]: "
      "onnx.checker.check_model(onnx.load(p), full_check=True)\" " +
      (dir.path() / "mlp.onnx").string() + " " + (dir.path() / "cnn.onnx").string() + " " +
      (dir.path() / "enc.onnx").string();
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
