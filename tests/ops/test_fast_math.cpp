// kiln's own vectorized erf and exp (devices/cpu/fast_erf.h, fast_exp.h) against double-precision
// std::erf and std::exp: the stated ulp bounds on a sweep of floats of every magnitude (the bounds
// come from an exhaustive run over all 2^32 floats), their special values, and the CPU erf and
// exp ops giving exactly those functions' bits, fused or not.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kiln/devices/cpu/fast_erf.h"
#include "kiln/devices/cpu/fast_exp.h"
#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

using cpu::simd::kLanes;

constexpr double kErfMaxUlp = 1.151;
constexpr double kExpMaxUlp = 0.910;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Every 1021st bit pattern: about four million floats, both signs, subnormals to infinities.
std::vector<float> sweep() {
  std::vector<float> v;
  for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 1021)
    v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
  return v;
}

template <class Fn>
std::vector<float> vector_map(Fn fn, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); i += kLanes) {
    alignas(64) float in[kLanes] = {}, out[kLanes];
    const std::size_t m = std::min<std::size_t>(kLanes, x.size() - i);
    std::copy(x.begin() + i, x.begin() + i + m, in);
    cpu::simd::store(out, fn(cpu::simd::load(in)));
    std::copy(out, out + m, y.begin() + i);
  }
  return y;
}

// Distance from the exact value in units of the float spacing at the exact value.
double ulp_error(float got, double exact) {
  const double a = std::fabs(exact);
  const double ulp = a < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(static_cast<float>(a)) - 23);
  return std::fabs(got - exact) / ulp;
}

// Largest ulp error over the finite results; NaN inputs must give NaN, overflow must give inf.
template <class Exact>
double max_ulp(const std::vector<float>& x, const std::vector<float>& y, Exact exact) {
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << "x = " << x[i];
      continue;
    }
    const double e = exact(static_cast<double>(x[i]));
    if (std::isinf(static_cast<float>(e))) {
      EXPECT_EQ(y[i], static_cast<float>(e)) << "x = " << x[i];
      continue;
    }
    worst = std::max(worst, ulp_error(y[i], e));
  }
  return worst;
}

TEST(FastMath, ErfWithinStatedUlp) {
  const std::vector<float> x = sweep();
  const std::vector<float> y = vector_map([](cpu::simd::VF v) { return cpu::simd::erf(v); }, x);
  EXPECT_LE(max_ulp(x, y, [](double v) { return std::erf(v); }), kErfMaxUlp);
}

TEST(FastMath, ExpWithinStatedUlp) {
  const std::vector<float> x = sweep();
  const std::vector<float> y = vector_map([](cpu::simd::VF v) { return cpu::simd::exp(v); }, x);
  EXPECT_LE(max_ulp(x, y, [](double v) { return std::exp(v); }), kExpMaxUlp);
}

TEST(FastMath, SpecialValues) {
  const std::vector<float> x = {0.0f, -0.0f, kInf, -kInf, kNaN, 0x1p-149f, -0x1p-149f, 3.92f, -3.92f, 88.8f, -104.0f};
  const std::vector<float> e = vector_map([](cpu::simd::VF v) { return cpu::simd::erf(v); }, x);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(e[0]), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(e[1]), 0x80000000u);  // -0 stays -0
  EXPECT_EQ(e[2], 1.0f);
  EXPECT_EQ(e[3], -1.0f);
  EXPECT_TRUE(std::isnan(e[4]));
  EXPECT_EQ(e[5], static_cast<float>(std::erf(0x1p-149)));
  EXPECT_EQ(e[7], 1.0f);
  EXPECT_EQ(e[8], -1.0f);
  const std::vector<float> p = vector_map([](cpu::simd::VF v) { return cpu::simd::exp(v); }, x);
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[1], 1.0f);
  EXPECT_EQ(p[2], kInf);
  EXPECT_EQ(p[3], 0.0f);
  EXPECT_TRUE(std::isnan(p[4]));
  EXPECT_EQ(p[9], kInf);
  EXPECT_EQ(p[10], 0.0f);
}

// The ops are these functions, whether fusion is on or off (the suite runs both ways).
TEST(FastMath, CpuOpsUseThem) {
  std::vector<float> x = sweep();
  x.resize(100003);  // not a multiple of the vector width: the tail goes through the same code
  const Tensor t = from_vector(x, Shape{static_cast<std::int64_t>(x.size())});
  const std::vector<float> erf_op = erf(t).to_vector<float>().get();
  const std::vector<float> exp_op = exp(t).to_vector<float>().get();
  const std::vector<float> erf_fn = vector_map([](cpu::simd::VF v) { return cpu::simd::erf(v); }, x);
  const std::vector<float> exp_fn = vector_map([](cpu::simd::VF v) { return cpu::simd::exp(v); }, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(erf_op[i]), std::bit_cast<std::uint32_t>(erf_fn[i])) << "x = " << x[i];
    ASSERT_EQ(std::bit_cast<std::uint32_t>(exp_op[i]), std::bit_cast<std::uint32_t>(exp_fn[i])) << "x = " << x[i];
  }
}

}  // namespace
}  // namespace kiln
