// Matmuls of 1 to 9 rows against a large B, as a served model's requests meet its weights: on
// the CPU these take kiln's skinny kernels split over the cores (devices/cpu/skinny_gemm.cpp),
// with B stored [k, n] or transposed ([n, k], a Linear weight), with column and k tails; 9 rows
// go to OpenBLAS. References from PyTorch (tests/data/gen_skinny_matmul.py), which defines the
// operands by formula; every sum is exact in f32, so results must match exactly. Also: the same
// products from many threads at once (the core team is shared; a busy team runs on the caller).
#include <gtest/gtest.h>

#include <thread>

#include "support/reference.h"

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

Tensor product(const RefCase& c, Device d) {
  const std::int64_t m = c.attrs["m"], k = c.attrs["k"], n = c.attrs["n"];
  const bool tb = c.attrs["transpose_b"];
  const Tensor a = a_operand(m, k, d);
  return tb ? matmul(a, b_operand(n, k, d), {.transpose_b = true}) : matmul(a, b_operand(k, n, d));
}

class SkinnyMatmul : public ::testing::TestWithParam<Device> {};

TEST_P(SkinnyMatmul, MatchesTorchExactly) {
  const auto cases = cases_for("skinny_matmul.json", "skinny_matmul");
  ASSERT_EQ(cases.size(), 12u);
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

INSTANTIATE_TEST_SUITE_P(Devices, SkinnyMatmul, ::testing::ValuesIn(test_devices()), device_param_name);

}  // namespace
}  // namespace kiln::test
