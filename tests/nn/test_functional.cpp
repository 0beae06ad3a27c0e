// kiln::nn's functional ops (nn/functional.h) against PyTorch (tests/data/gen_nn_functional.py):
// forward values and every input's gradient, on each test device; finite differences on the
// CPU for the smooth cases; dropout's statistics; errors for bad shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/nn/functional.h"
#include "nn/functional_check.h"

namespace kiln {
namespace {

using test::Json;
using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
constexpr const char* kFunctionalFile = "nn_functional.json";

class NnFunctional : public ::testing::TestWithParam<Device> {
 protected:
  void check(const char* op, const test::NnCall& call) { test::check_nn_op(kFunctionalFile, op, GetParam(), call); }
};

// The tensor after the required ones when attrs[flag] says it was given, else undefined.
Tensor optional_input(const Inputs& in, std::size_t& next, const Json& a, const char* flag) {
  return a.value(flag, false) ? in.at(next++) : Tensor{};
}

Shape shape_attr(const Json& a) { return Shape(a.at("normalized_shape").get<std::vector<std::int64_t>>()); }

TEST_P(NnFunctional, Linear) {
  check("linear", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::linear(in[0], in[1], a.at("bias") ? in[2] : Tensor{})};
  });
}

TEST_P(NnFunctional, Bilinear) {
  check("bilinear", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::bilinear(in[0], in[1], in[2], a.at("bias") ? in[3] : Tensor{})};
  });
}

TEST_P(NnFunctional, LeakyRelu) {
  check("leaky_relu",
        [](const Inputs& in, const Json& a) -> Outputs { return {nn::leaky_relu(in[0], a.at("slope"))}; });
}

TEST_P(NnFunctional, Elu) {
  check("elu", [](const Inputs& in, const Json& a) -> Outputs { return {nn::elu(in[0], a.at("alpha"))}; });
}

TEST_P(NnFunctional, Prelu) {
  check("prelu", [](const Inputs& in, const Json&) -> Outputs { return {nn::prelu(in[0], in[1])}; });
}

TEST_P(NnFunctional, Gelu) {
  check("gelu", [](const Inputs& in, const Json& a) -> Outputs { return {nn::gelu(in[0], a.at("tanh").get<bool>())}; });
}

TEST_P(NnFunctional, Mish) {
  check("mish", [](const Inputs& in, const Json&) -> Outputs { return {nn::mish(in[0])}; });
}

TEST_P(NnFunctional, LayerNorm) {
  check("layer_norm", [](const Inputs& in, const Json& a) -> Outputs {
    std::size_t next = 1;
    Tensor w = optional_input(in, next, a, "weight"), b = optional_input(in, next, a, "bias");
    return {nn::layer_norm(in[0], shape_attr(a), w, b, a.value("eps", 1e-5))};
  });
}

TEST_P(NnFunctional, GroupNorm) {
  check("group_norm", [](const Inputs& in, const Json& a) -> Outputs {
    std::size_t next = 1;
    Tensor w = optional_input(in, next, a, "weight"), b = optional_input(in, next, a, "bias");
    return {nn::group_norm(in[0], a.at("groups"), w, b, a.value("eps", 1e-5))};
  });
}

TEST_P(NnFunctional, InstanceNorm) {
  check("instance_norm", [](const Inputs& in, const Json& a) -> Outputs {
    std::size_t next = 1;
    Tensor w = optional_input(in, next, a, "weight"), b = optional_input(in, next, a, "bias");
    return {nn::instance_norm(in[0], w, b, a.value("eps", 1e-5))};
  });
}

TEST_P(NnFunctional, RmsNorm) {
  check("rms_norm", [](const Inputs& in, const Json& a) -> Outputs {
    std::size_t next = 1;
    Tensor w = optional_input(in, next, a, "weight");
    const std::optional<double> eps = a.contains("eps") ? std::optional<double>(a.at("eps")) : std::nullopt;
    return {nn::rms_norm(in[0], shape_attr(a), w, eps)};
  });
}

// Outputs: y, then the new running mean and variance when the case passes them.
TEST_P(NnFunctional, BatchNorm) {
  check("batch_norm", [](const Inputs& in, const Json& a) -> Outputs {
    std::size_t next = 1;
    Tensor rm = optional_input(in, next, a, "running");
    Tensor rv = rm.defined() ? in.at(next++) : Tensor{};
    Tensor w = optional_input(in, next, a, "weight"), b = optional_input(in, next, a, "bias");
    nn::BatchNormResult r = nn::batch_norm(in[0], rm, rv, w, b, a.at("training"), a.at("momentum"), a.at("eps"));
    if (!a.at("running")) return {r.output};
    return {r.output, r.running_mean, r.running_var};
  });
}

TEST_P(NnFunctional, Embedding) {
  check("embedding", [](const Inputs& in, const Json& a) -> Outputs {
    const std::optional<std::int64_t> pad =
        a.contains("padding_idx") ? std::optional<std::int64_t>(a.at("padding_idx")) : std::nullopt;
    return {nn::embedding(in[0], in[1], pad)};
  });
}

// The running statistics are buffers: training records no gradient through them, and the
// tensors passed in keep their values.
TEST_P(NnFunctional, BatchNormRunningStatisticsAreNotRecorded) {
  const Device d = GetParam();
  Generator gen(3);
  const Tensor x = require_grad(randn(Shape{6, 2}, gen, {DType::f32, d}));
  const Tensor rm = zeros(Shape{2}, {DType::f32, d}), rv = ones(Shape{2}, {DType::f32, d});
  const nn::BatchNormResult r = nn::batch_norm(x, rm, rv, Tensor{}, Tensor{}, true);
  EXPECT_TRUE(requires_grad(r.output));
  EXPECT_FALSE(requires_grad(r.running_mean));
  EXPECT_FALSE(requires_grad(r.running_var));
  EXPECT_EQ(rm.to_vector<float>().get(), std::vector<float>(2, 0.0f));
  EXPECT_EQ(rv.to_vector<float>().get(), std::vector<float>(2, 1.0f));
}

// Dropout cannot match torch's random stream: check what defines it. Each kept element is
// x / (1 - p) exactly, the kept fraction is 1 - p within 6 standard deviations, the gradient is
// the same mask and scale, and a generator with the same seed draws the same mask.
TEST_P(NnFunctional, DropoutKeepsAndScales) {
  const Device d = GetParam();
  const std::int64_t n = d.kind == DeviceKind::cpu ? 1 << 16 : 1 << 12;
  const double p = 0.3;
  Generator values(1), gen(11), same(11);
  const Tensor x = require_grad(add(rand(Shape{n}, values, {DType::f32, d}), 0.5));
  const Tensor y = nn::dropout(x, p, true, gen);
  const std::vector<float> xv = x.to_vector<float>().get(), yv = y.to_vector<float>().get();
  const Tensor g = backward(sum(y)).get(x);
  const std::vector<float> gv = g.to_vector<float>().get();
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (yv[i] == 0.0f) {
      ASSERT_EQ(gv[i], 0.0f) << i;
      continue;
    }
    ++kept;
    ASSERT_FLOAT_EQ(yv[i], xv[i] * scale) << i;
    ASSERT_FLOAT_EQ(gv[i], scale) << i;
  }
  const double sd = std::sqrt(p * (1 - p) / static_cast<double>(n));
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(n), 1 - p, 6 * sd);
  EXPECT_EQ(nn::dropout(detach(x), p, true, same).to_vector<float>().get(), yv);
}

TEST_P(NnFunctional, DropoutIdentityAndAllDropped) {
  const Device d = GetParam();
  const Tensor x = from_vector(std::vector<float>{1.5f, -2.0f, 0.25f, 3.0f}, Shape{2, 2}, d);
  Generator gen(5);
  EXPECT_EQ(nn::dropout(x, 0.5, false, gen).to_vector<float>().get(), x.to_vector<float>().get());
  EXPECT_EQ(nn::dropout(x, 0.0, true, gen).to_vector<float>().get(), x.to_vector<float>().get());
  EXPECT_EQ(nn::dropout(x, 1.0, true, gen).to_vector<float>().get(), std::vector<float>(4, 0.0f));
  const Tensor leaf = require_grad(x);
  EXPECT_EQ(backward(sum(nn::dropout(leaf, 1.0, true, gen))).get(leaf).to_vector<float>().get(),
            std::vector<float>(4, 0.0f));
}

// Bad input throws kiln::Error on the caller's thread, naming the function and the shapes.
TEST(NnFunctionalErrors, NameTheFunctionAndTheShapes) {
  const Tensor x = zeros(Shape{2, 3}), x4 = zeros(Shape{2, 4, 3});
  const Tensor idx = from_vector(std::vector<std::int64_t>{0, 1}, Shape{2});
  test::expect_error([&] { nn::linear(x, zeros(Shape{4, 5})); }, "linear", {"[2, 3]", "[4, 5]"});
  test::expect_error([&] { nn::linear(x, zeros(Shape{4, 3}), zeros(Shape{3})); }, "linear", {"bias", "[3]"});
  test::expect_error([&] { nn::linear(idx, zeros(Shape{4, 2})); }, "linear", {"floating", "i64"});
  test::expect_error(
      [&] {
        nn::bilinear(x, zeros(Shape{3, 2}), zeros(Shape{4, 3, 2}));
      },
      "bilinear", {"[2, 3]", "[3, 2]"});
  test::expect_error([&] { nn::prelu(x4, zeros(Shape{3})); }, "prelu", {"[3]", "[2, 4, 3]"});
  test::expect_error([&] { nn::dropout(x, 1.5, true); }, "dropout", {"1.5"});
  test::expect_error([&] { nn::layer_norm(x, Shape{2}); }, "layer_norm", {"[2]", "[2, 3]"});
  test::expect_error([&] { nn::layer_norm(x, Shape{3}, zeros(Shape{4})); }, "layer_norm", {"weight", "[4]"});
  test::expect_error([&] { nn::rms_norm(x, Shape{2, 3, 1}); }, "rms_norm", {"[2, 3, 1]"});
  test::expect_error([&] { nn::group_norm(x4, 3); }, "group_norm", {"groups = 3", "[2, 4, 3]"});
  test::expect_error([&] { nn::group_norm(x4, 2, zeros(Shape{3})); }, "group_norm", {"weight", "[4]", "[3]"});
  test::expect_error([&] { nn::instance_norm(x); }, "instance_norm", {"[2, 3]"});
  test::expect_error([&] { nn::instance_norm(zeros(Shape{2, 3, 1})); }, "instance_norm", {"spatial", "[2, 3, 1]"});
  test::expect_error(
      [&] {
        nn::batch_norm(zeros(Shape{1, 3}), {}, {}, {}, {}, true);
      },
      "batch_norm", {"more than 1 value", "[1, 3]"});
  test::expect_error([&] { nn::batch_norm(x, {}, {}, {}, {}, false); }, "batch_norm", {"running"});
  test::expect_error([&] { nn::batch_norm(x, zeros(Shape{2}), ones(Shape{2}), {}, {}, true); }, "batch_norm",
                     {"running_mean", "[3]", "[2]"});
  test::expect_error([&] { nn::embedding(x, zeros(Shape{4, 2})); }, "embedding", {"i64", "f32"});
  test::expect_error([&] { nn::embedding(idx, zeros(Shape{4})); }, "embedding", {"[4]"});
  test::expect_error([&] { nn::embedding(idx, zeros(Shape{4, 2}), 4); }, "embedding", {"padding_idx 4"});
}

INSTANTIATE_TEST_SUITE_P(Devices, NnFunctional, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
