// matmul against PyTorch (tests/data/gen_linalg.py), against plain loops for sizes that take the
// threaded and batch-parallel paths, and its call-site errors.
#include <gtest/gtest.h>

#include <random>

#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln {
namespace {

using test::matches;
using test::Tolerance;

// f32 products: the summation order differs from PyTorch's, so rtol 1e-4, atol 1e-4.
constexpr Tolerance kMatmulTolerance{1e-4, 1e-4};

class Linalg : public ::testing::TestWithParam<Device> {};

TEST_P(Linalg, MatmulMatchesTorch) {
  const auto cases = test::cases_for("linalg.json", "matmul");
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor out = matmul(test::make_tensor(c.inputs[0], GetParam()), test::make_tensor(c.inputs[1], GetParam()));
    EXPECT_TRUE(matches(out, c.outputs[0], kMatmulTolerance));
  }
}

// Operands entering transposed: read in place on the CPU, copied first elsewhere.
TEST_P(Linalg, MatmulTransposedOperandsMatchTorch) {
  const auto cases = test::cases_for("linalg.json", "matmul_t");
  ASSERT_GE(cases.size(), 14u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const MatmulOptions o{.transpose_a = c.attrs.at("transpose_a").get<bool>(),
                          .transpose_b = c.attrs.at("transpose_b").get<bool>()};
    Tensor out = matmul(test::make_tensor(c.inputs[0], GetParam()), test::make_tensor(c.inputs[1], GetParam()), o);
    EXPECT_TRUE(matches(out, c.outputs[0], kMatmulTolerance));
  }
}

TEST_P(Linalg, MatmulTransposedOperandErrors) {
  const Tensor v = ones(Shape{4}, {DType::f32, GetParam()}), m = ones(Shape{3, 4}, {DType::f32, GetParam()});
  test::expect_error([&] { matmul(v, m, {.transpose_a = true}); }, "matmul", {"transposed", "[4]"});
  test::expect_error([&] { matmul(m, m, {.transpose_a = false, .transpose_b = false}); }, "matmul", {"inner dims"});
  test::expect_error([&] { matmul(m, ones(Shape{5, 3}, {DType::f32, GetParam()}), {.transpose_b = true}); }, "matmul",
                     {"inner dims"});
}

TEST_P(Linalg, MatmulOfAMatmulMatchesTorch) {
  const auto cases = test::cases_for("linalg.json", "matmul_chain");
  ASSERT_EQ(cases.size(), 1u);
  const auto& c = cases[0];
  Tensor ab = matmul(test::make_tensor(c.inputs[0], GetParam()), test::make_tensor(c.inputs[1], GetParam()));
  Tensor out = matmul(std::move(ab), test::make_tensor(c.inputs[2], GetParam()));
  EXPECT_TRUE(matches(out, c.outputs[0], kMatmulTolerance));
}

std::vector<float> random_values(std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

// Batched product by plain loops in double; b_batches is 1 when B is shared by every batch.
std::vector<double> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, std::int64_t batches,
                                 std::int64_t b_batches, std::int64_t m, std::int64_t k, std::int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(batches * m * n), 0.0);
  for (std::int64_t t = 0; t < batches; ++t) {
    const float* at = a.data() + t * m * k;
    const float* bt = b.data() + (b_batches == 1 ? 0 : t) * k * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p)
        for (std::int64_t j = 0; j < n; ++j) c[(t * m + i) * n + j] += double(at[i * k + p]) * bt[p * n + j];
  }
  return c;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > tol * (1.0 + std::abs(want[i])) && ++bad <= 5)
      ADD_FAILURE() << "[" << i << "] got " << got[i] << " want " << want[i];
}

struct LoopCase {
  const char* name;
  std::int64_t batches, b_batches, m, k, n;
};

// Sizes that take each path of the CPU kernel: one product threaded by OpenBLAS, a shared right
// operand folded into one taller product, many small products in parallel, a few large ones.
TEST_P(Linalg, MatmulPathsMatchPlainLoops) {
  const LoopCase cases[] = {
      {"single_large", 1, 1, 200, 300, 150}, {"matrix_vector", 1, 1, 500, 400, 1}, {"vector_matrix", 1, 1, 1, 400, 500},
      {"shared_b_folded", 6, 1, 50, 64, 40}, {"many_small", 3000, 3000, 4, 5, 3},  {"few_large", 3, 3, 70, 80, 60},
  };
  for (const LoopCase& lc : cases) {
    SCOPED_TRACE(lc.name);
    const auto a = random_values(lc.batches * lc.m * lc.k, 1);
    const auto b = random_values(lc.b_batches * lc.k * lc.n, 2);
    Shape sa{lc.batches, lc.m, lc.k}, sb{lc.b_batches, lc.k, lc.n};
    if (lc.b_batches == 1) sb = Shape{lc.k, lc.n};
    Tensor c = matmul(from_vector(a, sa, GetParam()), from_vector(b, sb, GetParam()));
    EXPECT_EQ(c.shape(), (Shape{lc.batches, lc.m, lc.n}));
    // k <= 400 terms of magnitude <= 1: f32 accumulation stays well inside 1e-4 relative.
    expect_close(c.to_vector<float>().get(), naive_matmul(a, b, lc.batches, lc.b_batches, lc.m, lc.k, lc.n), 1e-4);
  }
}

void expect_matmul_error(const Tensor& a, const Tensor& b, const std::vector<std::string>& fragments) {
  try {
    (void)matmul(a, b);
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "matmul");
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST_P(Linalg, MatmulCallSiteErrors) {
  const Device d = GetParam();
  expect_matmul_error(zeros(Shape{2, 3}, {DType::i64, d}), zeros(Shape{3, 2}, {DType::f32, d}),
                      {"expected f32 operands", "i64[2, 3]", "f32[3, 2]"});
  expect_matmul_error(zeros(Shape{2, 3}, {DType::f32, d}), zeros(Shape{3}, {DType::bool_, d}), {"bool[3]"});
  expect_matmul_error(zeros(Shape{2, 3}, {DType::f32, d}), zeros(Shape{4, 5}, {DType::f32, d}),
                      {"inner dims", "[2, 3]", "[4, 5]"});
  expect_matmul_error(zeros(Shape{3}, {DType::f32, d}), zeros(Shape{4}, {DType::f32, d}), {"[3]", "[4]"});
  expect_matmul_error(zeros(Shape{}, {DType::f32, d}), zeros(Shape{3}, {DType::f32, d}),
                      {"at least 1 dim", "f32[]", "f32[3]"});
  expect_matmul_error(zeros(Shape{2, 2, 3}, {DType::f32, d}), zeros(Shape{3, 3, 5}, {DType::f32, d}),
                      {"batch dims", "[2, 2, 3]", "[3, 3, 5]"});
  // A failed call leaves the engine and its inputs usable.
  Tensor a = ones(Shape{2, 3}, {DType::f32, d});
  EXPECT_THROW((void)matmul(a, ones(Shape{2, 3}, {DType::f32, d})), Error);
  EXPECT_EQ(matmul(a, ones(Shape{3}, {DType::f32, d})).to_vector<float>().get(), (std::vector<float>{3, 3}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Linalg, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
