// Matmuls of 1 to 513 rows against a large B, as a served model's requests meet its weights. On
// the CPU, with B stored [k, n] or transposed ([n, k], a Linear weight), with column and k tails:
// 1 to 512 rows take kiln's packed-panel kernels (devices/cpu/packed_weights.h), packing B as
// they go until B is kept packed (from its second product on), and with packing off 1 to 8 rows
// take the skinny kernels split over the cores (devices/cpu/skinny_gemm.cpp) and 9 to 512 the
// packed kernels as they go; 513 rows go to OpenBLAS; a B of at most two vectors of columns (a
// classifier's last layer) takes the narrow kernel on one thread; a Linear layer's bias and
// ReLU, fused after the product, are applied by the packed product itself. References from
// PyTorch (tests/data/gen_skinny_matmul.py), which defines the operands by formula; every sum is
// exact in f32, so results must match exactly. Also: the same products from many threads at
// once (the core team is shared; a busy team runs on the caller); products repeated with one B,
// whose packed copy is dropped when B's buffer is reused in place; and, with values that round,
// the same bits before and after B is packed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/reference.h"
#include "support/weight_packing.h"

namespace kiln::test {
namespace {

// The generator's formulas (gen_skinny_matmul.py: a_values, b_values).
Tensor a_operand(std::int64_t m, std::int64_t k, Device d) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) v.push_back(static_cast<float>((i * 5 + p * 3) % 17 - 8) / 8.0f);
  return from_vector(v, {m, k}, d);
}

Tensor b_operand(std::int64_t rows, std::int64_t cols, Device d) {
  std::vector<float> v;
  for (std::int64_t q = 0; q < rows * cols; ++q) v.push_back(static_cast<float>((q * 7) % 19 - 9) / 8.0f);
  return from_vector(v, {rows, cols}, d);
}

// The generator's bias formula (gen_skinny_matmul.py: bias_values).
Tensor bias_operand(std::int64_t n, Device d) {
  std::vector<float> v;
  for (std::int64_t j = 0; j < n; ++j) v.push_back(static_cast<float>((j * 5) % 13 - 6) / 8.0f);
  return from_vector(v, {n}, d);
}

// relu?(x @ B + bias), once or twice (the second layer takes the first's output, a temporary).
Tensor linear_layers(const RefCase& c, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const bool tb = c.attrs["transpose_b"], relu_after = c.attrs["relu"];
  auto layer = [&](Tensor x) {
    Tensor y = add(matmul(std::move(x), b, {.transpose_b = tb}), bias);
    return relu_after ? relu(std::move(y)) : y;
  };
  Tensor y = layer(a);
  if (c.attrs["layers"] == 2) y = layer(std::move(y));
  return y;
}

// A case's A [m, k] and B as stored ([k, n], or [n, k] when transposed).
std::pair<Tensor, Tensor> operands(const RefCase& c, Device d) {
  const std::int64_t m = c.attrs["m"], k = c.attrs["k"], n = c.attrs["n"];
  const bool tb = c.attrs["transpose_b"];
  return {a_operand(m, k, d), tb ? b_operand(n, k, d) : b_operand(k, n, d)};
}

Tensor product(const RefCase& c, Device d) {
  const auto [a, b] = operands(c, d);
  return matmul(a, b, {.transpose_b = c.attrs["transpose_b"]});
}

class SkinnyMatmul : public ::testing::TestWithParam<Device> {};

// Fills the pool's block that a [m, n] result would come from with NaN and gives it back, so that
// a product which leaves part of its output unwritten is caught: without it the next round's
// output came from the block the last round had filled with the right values.
void scribble_over_result_block(std::int64_t m, std::int64_t n, Device d) {
  (void)host_values(full({m, n}, std::numeric_limits<double>::quiet_NaN(), {.device = d}));
}

TEST_P(SkinnyMatmul, MatchesTorchExactly) {
  const auto cases = cases_for("skinny_matmul.json", "skinny_matmul");
  ASSERT_EQ(cases.size(), 24u);
  for (const RefCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(matches(product(c, GetParam()), c.outputs[0], {.rtol = 0, .atol = 0}));
  }
}

TEST_P(SkinnyMatmul, ManyThreadsAtOnceGetTheirOwnProducts) {
  const auto cases = cases_for("skinny_matmul.json", "skinny_matmul");
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        const RefCase& c = cases[(t + round) % cases.size()];
        const std::vector<double> got = host_values(product(c, GetParam()));
        if (!values_close(got, json_values(c.outputs[0]), {.rtol = 0, .atol = 0})) ++failures[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

// A served model's weights: the same B for product after product, packed once on the CPU.
TEST_P(SkinnyMatmul, RepeatedProductsWithOneWeightMatchTorchExactly) {
  const Device d = GetParam();
  const auto cases = cases_for("skinny_matmul.json", "skinny_matmul");
  const std::uint64_t packed_before = counters(d).weights_packed;
  std::uint64_t packable = 0;
  for (const RefCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto [a, b] = operands(c, d);
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      EXPECT_TRUE(matches(matmul(a, b, {.transpose_b = c.attrs["transpose_b"]}), c.outputs[0], {.rtol = 0, .atol = 0}));
      scribble_over_result_block(c.attrs["m"], c.attrs["n"], d);
    }
    // Narrow products are never packed, nor products of more than 512 rows.
    packable += c.attrs["m"] <= 512 && c.name.rfind("narrow", 0) != 0;
  }
  // Each other B packed once, on its second product (on a GPU, or with packing off, never).
  EXPECT_EQ(counters(d).weights_packed - packed_before,
            d.kind == DeviceKind::cpu && test::weight_packing_on() ? packable : 0u);
}

// A Linear layer's product, bias and ReLU: from B's second product on, the CPU adds the bias and
// applies ReLU as the packed product stores its blocks, straight into the output
// (devices/cpu/fused_anchor.cpp); also for a layer whose input is the layer before's output, and
// after a narrow product (every time).
TEST_P(SkinnyMatmul, LinearLayersOnPackedWeightsMatchTorchExactly) {
  const Device d = GetParam();
  const auto cases = cases_for("skinny_matmul.json", "skinny_linear");
  ASSERT_EQ(cases.size(), 9u);
  for (const RefCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto [a, b] = operands(c, d);
    const Tensor bias = bias_operand(c.attrs["n"], d);
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      EXPECT_TRUE(matches(linear_layers(c, a, b, bias), c.outputs[0], {.rtol = 0, .atol = 0}));
      scribble_over_result_block(c.attrs["m"], c.attrs["n"], d);
    }
  }
}

// Threads sharing one model: the first products of each B race to pack it.
TEST_P(SkinnyMatmul, ManyThreadsSharingWeightsGetTheirOwnProducts) {
  const Device d = GetParam();
  const auto cases = cases_for("skinny_matmul.json", "skinny_matmul");
  std::vector<std::pair<Tensor, Tensor>> pairs;
  for (const RefCase& c : cases) pairs.push_back(operands(c, d));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3 * static_cast<int>(cases.size()); ++round) {
        const std::size_t i = static_cast<std::size_t>(round) % cases.size();
        const bool tb = cases[i].attrs["transpose_b"];
        const std::vector<double> got = host_values(matmul(pairs[i].first, pairs[i].second, {.transpose_b = tb}));
        if (!values_close(got, json_values(cases[i].outputs[0]), {.rtol = 0, .atol = 0})) ++failures[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

// A packed B whose buffer then holds other values (an op took B over and wrote its result in
// place) must not be used for them: the products after it see the new values.
TEST(SkinnyMatmulCpu, AWeightRewrittenInPlaceIsPackedAfresh) {
  const Device d = Device::cpu();
  const auto cases = cases_for("skinny_matmul.json", "skinny_matmul");
  const RefCase& c = *std::find_if(cases.begin(), cases.end(), [](const RefCase& r) { return r.name == "mlp_layer"; });
  const Tensor a = a_operand(1, 784, d);
  Tensor b = b_operand(784, 512, d);
  const std::uint64_t packed_before = counters(d).weights_packed;
  const std::uint64_t packs = test::weight_packing_on() ? 1 : 0;  // with packing off, the same values unpacked
  for (int round = 0; round < 2; ++round) EXPECT_TRUE(matches(matmul(a, b), c.outputs[0], {.rtol = 0, .atol = 0}));
  ASSERT_EQ(counters(d).weights_packed, packed_before + packs);

  const std::uint64_t reuses_before = counters(d).inplace_reuses;
  const Tensor doubled = mul(std::move(b), 2.0);  // exact: every value times a power of two
  std::vector<double> expected = json_values(c.outputs[0]);
  for (double& v : expected) v *= 2;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    EXPECT_TRUE(values_close(host_values(matmul(a, doubled)), expected, {.rtol = 0, .atol = 0}));
  }
  ASSERT_GT(counters(d).inplace_reuses, reuses_before) << "the doubling did not reuse B's buffer: nothing tested";
  EXPECT_EQ(counters(d).weights_packed, packed_before + 2 * packs);  // the new values, packed on their second product
}

// A value never depends on what ran before: the first product with a weight (unpacked), the
// second (which packs it) and the third (on the kept copy) give the same bits, with values whose
// sums round (random ones), for B stored either way. Without it a training step's products (new
// weights every step, never packed) would differ from evaluation's on the same weights.
TEST(SkinnyMatmulCpu, AProductGivesTheSameBitsBeforeAndAfterItsWeightIsPacked) {
  Generator gen(7);
  // k 200 against 130 columns, and the MLP's first layer (784 x 512), whose few-row products
  // split over the cores.
  for (const auto& [k, n] : {std::pair<std::int64_t, std::int64_t>{200, 130}, {784, 512}}) {
    for (const std::int64_t m : {1, 3, 8, 9, 37, 130, 512}) {
      for (const bool tb : {false, true}) {
        SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(k) + " x " + std::to_string(n) +
                     ", transposed B: " + std::to_string(tb));
        const Tensor a = randn(Shape{m, k}, gen);
        const Tensor b = tb ? randn(Shape{n, k}, gen) : randn(Shape{k, n}, gen);
        const std::vector<double> first = host_values(matmul(a, b, {.transpose_b = tb}));
        for (int round = 0; round < 2; ++round) {
          scribble_over_result_block(m, n, Device::cpu());
          EXPECT_EQ(host_values(matmul(a, b, {.transpose_b = tb})), first) << "round " << round + 1;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, SkinnyMatmul, ::testing::ValuesIn(test_devices()), device_param_name);

}  // namespace
}  // namespace kiln::test
