// Batch normalization in training mode (the batch_norm and batch_norm_backward ops behind
// nn::batch_norm) against PyTorch (tests/data/gen_nn_batch_norm.py): values, the running
// statistics and every input's gradient, on each test device, for every rank from [N, C] to
// [N, C, D, H, W], runs shorter and longer than a vector, data far from zero, and the end of a
// ResNet block. The decomposition rules stand in for the kernels in tests/ops/test_decompositions.cpp.
#include <gtest/gtest.h>

#include "kiln/nn/functional.h"
#include "kiln/nn/norm.h"
#include "nn/functional_check.h"

namespace kiln {
namespace {

using test::Json;
using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
constexpr const char* kFile = "nn_batch_norm.json";

class NnBatchNorm : public ::testing::TestWithParam<Device> {};

// Data far from zero (mean 300, std 0.02) is exact on the CPU only: the decomposition that
// other devices run subtracts an f32 mean, as PyTorch does in f32, and is off by ~1e-3 there.
TEST_P(NnBatchNorm, MatchesTorch) {
  const test::NnCall call = [](const Inputs& in, const Json& a) -> Outputs {
    std::size_t next = 1;
    Tensor rm, rv, w, b;
    if (a.at("running")) rm = in.at(next++), rv = in.at(next++);
    if (a.at("affine")) w = in.at(next++), b = in.at(next++);
    nn::BatchNormResult r = nn::batch_norm(in[0], rm, rv, w, b, true, a.at("momentum"), a.at("eps"));
    if (!a.at("running")) return {r.output};
    return {r.output, r.running_mean, r.running_var};
  };
  const std::vector<test::RefCase> cases = test::cases_for(kFile, "batch_norm");
  ASSERT_FALSE(cases.empty());
  for (const test::RefCase& c : cases)
    if (c.name != "far_from_zero" || GetParam().kind == DeviceKind::cpu) test::check_nn_case(c, GetParam(), call);
}

TEST_P(NnBatchNorm, ResnetTailMatchesTorch) {
  test::check_nn_op(kFile, "batch_norm_relu_add", GetParam(), [](const Inputs& in, const Json& a) -> Outputs {
    nn::BatchNormResult r = nn::batch_norm(in[0], {}, {}, in[1], in[2], true, 0.1, a.at("eps"));
    return {relu(add(r.output, in[3]))};
  });
}

// The module: two steps move the running statistics twice, and eval mode then normalizes with
// them (the composite path), as torch does. Values from the same formulas in double on the host.
TEST_P(NnBatchNorm, ModuleTrainsThenEvaluates) {
  const Device d = GetParam();
  nn::BatchNorm2d bn(3, {.momentum = 0.5, .device = d});
  Generator gen(5);
  const Tensor x = randn(Shape{4, 3, 2, 5}, gen, {DType::f32, d});
  const std::vector<float> xs = x.to_vector<float>().get();
  for (int step = 0; step < 2; ++step) (void)bn(x);
  const std::vector<float> rm = bn.running_mean.get().to_vector<float>().get();
  const std::vector<float> rv = bn.running_var.get().to_vector<float>().get();
  bn.eval();
  const std::vector<float> y = bn(x).to_vector<float>().get();
  for (int c = 0; c < 3; ++c) {
    double s = 0, ss = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 10; ++i) s += xs[static_cast<std::size_t>((n * 3 + c) * 10 + i)];
    const double mean = s / 40;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 10; ++i) {
        const double dlt = xs[static_cast<std::size_t>((n * 3 + c) * 10 + i)] - mean;
        ss += dlt * dlt;
      }
    const double unbiased = ss / 39;
    // Two steps of momentum 0.5 from (0, 1): 0.75 of the batch's value, plus 0.25 of the start.
    EXPECT_NEAR(rm[static_cast<std::size_t>(c)], 0.75 * mean, 1e-5);
    EXPECT_NEAR(rv[static_cast<std::size_t>(c)], 0.25 + 0.75 * unbiased, 1e-5);
    const double m = 0.75 * mean, v = 0.25 + 0.75 * unbiased;
    const std::size_t at = static_cast<std::size_t>(c * 10 + 3);
    EXPECT_NEAR(y[at], (xs[at] - m) / std::sqrt(v + 1e-5), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, NnBatchNorm, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
