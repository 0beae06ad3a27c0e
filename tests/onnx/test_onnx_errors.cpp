// Untrusted files: every broken model gives a kiln::Error that names the file, the node and its
// op type, and what is wrong (tests/data/onnx/broken, written by gen_onnx_models.py).
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/support/reference.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_files.h"

namespace kiln::test {
namespace {

std::filesystem::path broken(const std::string& name) { return reference_path("onnx/broken/" + name + ".onnx"); }

// The message of the kiln::Error that fn throws ("" and a failure if none).
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no kiln::Error";
  return "";
}

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(OnnxErrors, TruncatedAndGarbageFilesAreMalformedProtobuf) {
  const auto bytes = file_bytes(reference_path("onnx/cnn_bn.onnx"));
  ASSERT_GT(bytes.size(), 100u);
  for (std::size_t cut : {bytes.size() / 2, bytes.size() - 3, std::size_t(7)}) {
    const std::vector<std::byte> part(bytes.begin(), bytes.begin() + std::ptrdiff_t(cut));
    const std::string e = error_of([&] { onnx::load_from_bytes(part, {}, "cut.onnx"); });
    EXPECT_MENTIONS(e, "cut.onnx");
  }
  std::vector<std::byte> garbage(64, std::byte{0xff});
  EXPECT_MENTIONS(error_of([&] { onnx::load_from_bytes(garbage, {}, "garbage.onnx"); }),
                  "malformed or truncated protobuf");
  EXPECT_MENTIONS(error_of([] { onnx::load("/nonexistent/model.onnx"); }), "cannot open");
}

TEST(OnnxErrors, AMissingInitializerNamesTheNodeAndTheValue) {
  const std::string e = error_of([] { onnx::load(broken("missing_initializer")); });
  EXPECT_MENTIONS(e, "node 'add0' (Add)");
  EXPECT_MENTIONS(e, "'missing_w'");
}

TEST(OnnxErrors, ACycleIsReported) {
  const std::string e = error_of([] { onnx::load(broken("cycle")); });
  EXPECT_MENTIONS(e, "cycle");
  EXPECT_MENTIONS(e, "node 'first' (Add)");
}

TEST(OnnxErrors, UnsupportedOpsAndOpsetsAreUnsupportedErrors) {
  try {
    onnx::load(broken("unsupported_op"));
    ADD_FAILURE() << "loaded";
  } catch (const onnx::UnsupportedError& e) {
    EXPECT_EQ(e.feature(), "Det");
    EXPECT_MENTIONS(std::string(e.what()), "node 'det0' (Det)");
  }
  try {
    onnx::load(broken("opset_18"));
    ADD_FAILURE() << "loaded";
  } catch (const onnx::UnsupportedError& e) {
    EXPECT_MENTIONS(std::string(e.what()), "opset 18");
  }
}

TEST(OnnxErrors, RawDataOfTheWrongSizeNamesTheInitializer) {
  const std::string e = error_of([] { onnx::load(broken("short_raw_data")); });
  EXPECT_MENTIONS(e, "initializer 'w'");
  EXPECT_MENTIONS(e, "raw_data holds 10 bytes");
}

TEST(OnnxErrors, AShapeMismatchAtRunTimeNamesTheNodeAndShapes) {
  const auto m = onnx::load(broken("shape_mismatch"));
  const std::string e = error_of([&] { m(ones({2, 3})); });
  EXPECT_MENTIONS(e, "node 'matmul0' (MatMul)");
  EXPECT_MENTIONS(e, "[2, 3]");
}

TEST(OnnxErrors, InputsAreCheckedAgainstTheDeclaredTypeAndDims) {
  const auto m = onnx::load(reference_path("onnx/mlp.onnx"));
  EXPECT_MENTIONS(error_of([&] { m(ones({4, 5})); }), "input 'x' expects shape [-1, 6]");
  EXPECT_MENTIONS(error_of([&] { m(zeros({4, 6}, {DType::i64})); }), "input 'x' expects f32, got i64");
  EXPECT_MENTIONS(error_of([&] {
                    m.forward(std::map<std::string, Tensor>{{"z", ones({1, 6})}});
                  }),
                  "input 'x' is not given");
}

TEST(OnnxErrors, ExternalDataIsReadBesideTheModelAndNeverOutsideIt) {
  const auto m = onnx::load(broken("external_data"));
  EXPECT_TRUE(values_close(host_values(m(zeros({2, 3}))), {0, 1, 2, 3, 4, 5}, {0, 0}));
  const std::string e = error_of([] { onnx::load(broken("external_escape")); });
  EXPECT_MENTIONS(e, "'../weights.bin' must be a relative path inside the model's folder");
  // The same model from bytes without its folder: the file is not found.
  EXPECT_MENTIONS(error_of([] { onnx::load_from_bytes(file_bytes(broken("external_data")), "/nonexistent"); }),
                  "cannot open external data file");
}

}  // namespace
}  // namespace kiln::test
