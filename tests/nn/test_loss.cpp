// kiln::nn's losses (nn/loss.h) against PyTorch (tests/data/gen_nn_loss.py): values and
// gradients for each reduction, on each test device; finite differences on the CPU for the
// smooth cases; the edge cases (every target ignored, saturated probabilities, huge logits);
// errors for bad shapes and options.
#include <gtest/gtest.h>

#include "nn/functional_check.h"
#include "kiln/nn/loss.h"

namespace kiln {
namespace {

using test::Json;
using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
using nn::Reduction;
constexpr const char* kLossFile = "nn_loss.json";

class NnLoss : public ::testing::TestWithParam<Device> {
 protected:
  void check(const char* op, const test::NnCall& call) { test::check_nn_op(kLossFile, op, GetParam(), call); }
};

Reduction reduction(const Json& a) { return test::reduction_of<Reduction>(a); }
Tensor input_if(const Inputs& in, std::size_t i, const Json& a, const char* flag) {
  return a.at(flag).get<bool>() ? in.at(i) : Tensor{};
}

TEST_P(NnLoss, CrossEntropy) {
  check("cross_entropy", [](const Inputs& in, const Json& a) -> Outputs {
    nn::CrossEntropyOptions o{input_if(in, 2, a, "weight"), a.at("ignore_index"), a.at("label_smoothing"),
                              reduction(a)};
    return {nn::cross_entropy(in[0], in[1], o)};
  });
}

TEST_P(NnLoss, NllLoss) {
  check("nll_loss", [](const Inputs& in, const Json& a) -> Outputs {
    nn::NllLossOptions o{input_if(in, 2, a, "weight"), a.at("ignore_index"), reduction(a)};
    return {nn::nll_loss(in[0], in[1], o)};
  });
}

TEST_P(NnLoss, MseLoss) {
  check("mse_loss",
        [](const Inputs& in, const Json& a) -> Outputs { return {nn::mse_loss(in[0], in[1], reduction(a))}; });
}

TEST_P(NnLoss, L1Loss) {
  check("l1_loss",
        [](const Inputs& in, const Json& a) -> Outputs { return {nn::l1_loss(in[0], in[1], reduction(a))}; });
}

TEST_P(NnLoss, HuberLoss) {
  check("huber_loss", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::huber_loss(in[0], in[1], reduction(a), a.at("delta"))};
  });
}

TEST_P(NnLoss, SmoothL1Loss) {
  check("smooth_l1_loss", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::smooth_l1_loss(in[0], in[1], reduction(a), a.at("beta"))};
  });
}

TEST_P(NnLoss, BinaryCrossEntropy) {
  check("binary_cross_entropy", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::binary_cross_entropy(in[0], in[1], input_if(in, 2, a, "weight"), reduction(a))};
  });
}

TEST_P(NnLoss, BinaryCrossEntropyWithLogits) {
  check("binary_cross_entropy_with_logits", [](const Inputs& in, const Json& a) -> Outputs {
    std::size_t next = 2;
    Tensor w = a.at("weight").get<bool>() ? in.at(next++) : Tensor{};
    Tensor pw = a.at("pos_weight").get<bool>() ? in.at(next++) : Tensor{};
    return {nn::binary_cross_entropy_with_logits(in[0], in[1], w, pw, reduction(a))};
  });
}

TEST_P(NnLoss, KlDiv) {
  check("kl_div", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::kl_div(in[0], in[1], reduction(a), a.at("log_target"))};
  });
}

TEST_P(NnLoss, CosineEmbeddingLoss) {
  check("cosine_embedding_loss", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::cosine_embedding_loss(in[0], in[1], in[2], a.at("margin"), reduction(a))};
  });
}

TEST_P(NnLoss, MarginRankingLoss) {
  check("margin_ranking_loss", [](const Inputs& in, const Json& a) -> Outputs {
    return {nn::margin_ranking_loss(in[0], in[1], in[2], a.at("margin"), reduction(a))};
  });
}

// A -inf logit at an ignored position, or for a class no target picks, leaves the loss and
// its gradient finite (the mask is a select, not a multiplication by 0).
TEST_P(NnLoss, CrossEntropyIgnoresNonFiniteLogitsOfIgnoredTargets) {
  const Device d = GetParam();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor logits =
      require_grad(from_vector(std::vector<float>{1.0f, -inf, 0.5f, -inf, 2.0f, 0.0f}, Shape{2, 3}, d));
  const Tensor target = from_vector(std::vector<std::int64_t>{0, 1}, Shape{2}, d);
  const Tensor loss = nn::cross_entropy(logits, target, {.ignore_index = 1});
  // torch: log(1 + e^-0.5) for the first row alone.
  EXPECT_NEAR(loss.item<float>().get(), std::log1p(std::exp(-0.5)), 1e-6);
  for (float g : backward(loss).get(logits).to_vector<float>().get()) EXPECT_TRUE(std::isfinite(g));
}

TEST(NnLossErrors, NameTheLossAndTheShapes) {
  const Tensor logits = zeros(Shape{4, 5}), pair = zeros(Shape{3, 4});
  const Tensor idx4 = from_vector(std::vector<std::int64_t>{0, 1, 2, 3}, Shape{4});
  const Tensor idx3 = from_vector(std::vector<std::int64_t>{0, 1, 2}, Shape{3});
  test::expect_error([&] { nn::cross_entropy(logits, idx3); }, "cross_entropy", {"[3]", "[4]", "[4, 5]"});
  test::expect_error([&] { nn::cross_entropy(logits, zeros(Shape{4, 4})); }, "cross_entropy", {"[4, 4]", "[4, 5]"});
  test::expect_error([&] { nn::cross_entropy(logits, idx4, {.weight = ones(Shape{4})}); }, "cross_entropy",
                     {"weight", "[5]", "[4]"});
  test::expect_error([&] { nn::cross_entropy(logits, idx4, {.label_smoothing = 1.5}); }, "cross_entropy",
                     {"label_smoothing"});
  test::expect_error([&] { nn::cross_entropy(logits, idx4, {.reduction = Reduction::batchmean}); }, "cross_entropy",
                     {"batchmean"});
  test::expect_error([&] { nn::cross_entropy(logits, cast(idx4, DType::bool_)); }, "cross_entropy", {"bool"});
  test::expect_error([&] { nn::nll_loss(logits, zeros(Shape{4, 5})); }, "nll_loss", {"i64", "f32"});
  test::expect_error([&] { nn::mse_loss(pair, zeros(Shape{4, 3})); }, "mse_loss", {"[3, 4]", "[4, 3]"});
  test::expect_error([&] { nn::l1_loss(pair, zeros(Shape{4})); }, "l1_loss", {"[3, 4]", "[4]"});
  test::expect_error([&] { nn::huber_loss(pair, pair, Reduction::mean, 0.0); }, "huber_loss", {"delta"});
  test::expect_error([&] { nn::smooth_l1_loss(pair, pair, Reduction::mean, -1.0); }, "smooth_l1_loss", {"beta"});
  test::expect_error([&] { nn::binary_cross_entropy(pair, pair, zeros(Shape{3})); }, "binary_cross_entropy",
                     {"weight", "[3]", "[3, 4]"});
  test::expect_error([&] { nn::binary_cross_entropy_with_logits(pair, pair, {}, zeros(Shape{5})); },
                     "binary_cross_entropy_with_logits", {"pos_weight", "[5]", "[3, 4]"});
  test::expect_error([&] { nn::mse_loss(pair, pair, Reduction::batchmean); }, "mse_loss", {"batchmean"});
  test::expect_error([&] { nn::kl_div(pair, zeros(Shape{3, 5})); }, "kl_div", {"[3, 4]", "[3, 5]"});
  test::expect_error([&] { nn::cosine_embedding_loss(pair, pair, zeros(Shape{4})); }, "cosine_embedding_loss",
                     {"[4]", "[3]"});
  test::expect_error(
      [&] {
        nn::cosine_embedding_loss(zeros(Shape{2, 3, 4}), zeros(Shape{2, 3, 4}), zeros(Shape{2}));
      },
      "cosine_embedding_loss", {"[2, 3, 4]"});
  test::expect_error([&] { nn::margin_ranking_loss(zeros(Shape{4}), zeros(Shape{4}), zeros(Shape{3})); },
                     "margin_ranking_loss", {"[3]", "[4]"});
}

INSTANTIATE_TEST_SUITE_P(Devices, NnLoss, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
