// Every elementwise op on Vulkan against the CPU device's result (the CPU ops are verified
// against PyTorch in tests/ops). Integer and bool results must be identical; f32 results agree
// within the tolerances stated per op below. Also: fused and unfused runs agree on Vulkan.
#include <cmath>
#include <limits>

#include "vulkan_test_support.h"
#include "support/fusion_scope.h"

namespace kiln::test {
namespace {

using Make = std::function<Tensor(Device)>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// f32 values with every special case: NaN, infinities, signed zeros, halves, large and tiny.
std::vector<float> special_floats() {
  std::vector<float> v{NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 1.0f, -1.0f,
                       3.0f, -3.0f, 1e-7f, -1e-7f, 1e-3f, 30.0f, -30.0f, 88.0f, -100.0f, 1e10f, -1e10f, 7.0f};
  for (int i = 0; i < 200; ++i) v.push_back(-10.0f + 0.1f * static_cast<float>(i) + 0.0123f);
  return v;
}
std::vector<std::int64_t> special_ints() {
  std::vector<std::int64_t> v{0, 1, -1, 2, -2, 3, -7, 7, 100, -100, INT64_MAX, INT64_MIN, 12345678901LL};
  for (int i = 0; i < 24; ++i) v.push_back(i * 37 - 400);
  return v;
}

Make elementwise_floats(Shape s = {}, float max_abs = INFINITY) {
  return [s, max_abs](Device d) {
    std::vector<float> v = special_floats();
    for (float& x : v)
      if (std::abs(x) > max_abs && std::isfinite(x)) x = std::fmod(x, max_abs);
    return from_vector(v, s.rank() ? s : Shape{static_cast<std::int64_t>(v.size())}, d);
  };
}
Make ints() {
  return [](Device d) {
    std::vector<std::int64_t> v = special_ints();
    return from_vector(v, Shape{static_cast<std::int64_t>(v.size())}, d);
  };
}
Make bools(std::size_t n = 37) {
  return [n](Device d) {
    std::vector<bool> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = (i * 7 % 3) == 0;
    return from_vector(v, Shape{static_cast<std::int64_t>(n)}, d);
  };
}
// A second operand of the same length, other values (for binary ops).
Make floats_b() {
  return [](Device d) {
    std::vector<float> v = special_floats();
    std::reverse(v.begin(), v.end());
    return from_vector(v, Shape{static_cast<std::int64_t>(v.size())}, d);
  };
}
Make ints_b() {
  return [](Device d) {
    std::vector<std::int64_t> v = special_ints();
    std::reverse(v.begin(), v.end());
    for (auto& x : v) x = x == 0 ? 3 : x;  // no integer division by zero
    return from_vector(v, Shape{static_cast<std::int64_t>(v.size())}, d);
  };
}

// f32 tolerances: exact ops (arithmetic, rounding, comparisons) are bit-exact in IEEE f32;
// the transcendental functions are the driver's (exp, log, sin, cos, atan) or kiln's own GLSL.
constexpr Tol kExact{0, 0};
constexpr Tol kMath{2e-6, 1e-6};
constexpr Tol kTrig{2e-6, 2e-6};
constexpr Tol kPow{1e-5, 1e-6};
constexpr Tol kRem{1e-6, 1e-6};
constexpr Tol kTan{1e-5, 2e-6};

struct UnaryCase {
  const char* name;
  Tensor (*fn)(Tensor);
  Tol tol;
};

TEST(VulkanElementwise, UnaryOpsMatchTheCpu) {
  KILN_REQUIRE_VULKAN();
  const UnaryCase cases[] = {
      {"neg", neg, kExact},         {"abs", abs, kExact},           {"exp", exp, kMath},
      {"log", log, kMath},          {"log1p", log1p, kMath},        {"expm1", expm1, kMath},
      {"sqrt", sqrt, kMath},        {"rsqrt", rsqrt, kMath},        {"square", square, kExact},
      {"reciprocal", reciprocal, kMath}, {"sin", sin, kTrig},       {"cos", cos, kTrig},
      {"tan", tan, kTan},   {"tanh", tanh, kMath},          {"sigmoid", sigmoid, kMath},
      {"erf", erf, kMath},          {"relu", relu, kExact},         {"gelu", gelu, kMath},
      {"silu", silu, kMath},        {"softplus", softplus, kMath},  {"floor", floor, kExact},
      {"ceil", ceil, kExact},       {"round", round, kExact},       {"sign", sign, kExact},
      {"isnan", isnan, kExact},     {"isinf", isinf, kExact},
  };
  for (const UnaryCase& c : cases) {
    // sin, cos and tan reduce their argument themselves for |x| < 1e5 and use the driver's
    // functions beyond (kiln limitation, see devices/vulkan/vk_prelude.cpp): 1e10 becomes its
    // remainder by 1e4 here.
    const bool trig = c.fn == static_cast<Tensor (*)(Tensor)>(sin) || c.fn == static_cast<Tensor (*)(Tensor)>(cos) ||
                      c.fn == static_cast<Tensor (*)(Tensor)>(tan);
    if (trig) {
      EXPECT_TRUE(same_as_cpu(
          {elementwise_floats(Shape{}, 1e4f)}, [&](const std::vector<Tensor>& x) { return c.fn(x[0]); }, c.tol))
          << c.name;
      continue;
    }
    EXPECT_TRUE(same_as_cpu(
        {elementwise_floats()}, [&](const std::vector<Tensor>& x) { return c.fn(x[0]); }, c.tol))
        << c.name << " f32";
    // Integer and bool inputs: integer ops stay exact; float math converts first.
    for (const Make& m : {ints(), bools()}) {
      Tensor probe = m(Device::cpu());
      bool supported = true;
      try {
        (void)c.fn(probe);
      } catch (const Error&) {
        supported = false;  // rejected at the call site (abs of bool, ...)
      }
      if (supported) {
        EXPECT_TRUE(same_as_cpu({m}, [&](const std::vector<Tensor>& x) { return c.fn(x[0]); }, c.tol))
            << c.name << " " << dtype_name(probe.dtype());
      }
    }
  }
  EXPECT_TRUE(same_as_cpu({bools()}, [](const std::vector<Tensor>& x) { return logical_not(x[0]); }, kExact));
  EXPECT_TRUE(same_as_cpu({ints()}, [](const std::vector<Tensor>& x) { return logical_not(x[0]); }, kExact));
}

TEST(VulkanElementwise, CastsMatchTheCpu) {
  KILN_REQUIRE_VULKAN();
  for (const Make& m : {elementwise_floats(), ints(), bools()})
    for (DType t : {DType::f32, DType::i64, DType::bool_})
      EXPECT_TRUE(same_as_cpu({m}, [t](const std::vector<Tensor>& x) { return cast(x[0], t); }, kExact))
          << "to " << dtype_name(t);
}

struct BinaryCase {
  const char* name;
  Tensor (*tt)(Tensor, Tensor);
  Tensor (*ts)(Tensor, double);
  Tensor (*st)(double, Tensor);
  Tol tol;
};

#define KILN_BIN(name, tol) {#name, static_cast<Tensor (*)(Tensor, Tensor)>(name), static_cast<Tensor (*)(Tensor, double)>(name), static_cast<Tensor (*)(double, Tensor)>(name), tol}

TEST(VulkanElementwise, BinaryOpsMatchTheCpu) {
  KILN_REQUIRE_VULKAN();
  const BinaryCase cases[] = {
      KILN_BIN(add, kExact),     KILN_BIN(sub, kExact),     KILN_BIN(mul, kExact),
      KILN_BIN(div, kMath),      KILN_BIN(pow, kPow), KILN_BIN(remainder, kRem),
      KILN_BIN(maximum, kExact), KILN_BIN(minimum, kExact), KILN_BIN(atan2, kTrig),
      KILN_BIN(eq, kExact),      KILN_BIN(ne, kExact),      KILN_BIN(lt, kExact),
      KILN_BIN(le, kExact),      KILN_BIN(gt, kExact),      KILN_BIN(ge, kExact),
      KILN_BIN(logical_and, kExact), KILN_BIN(logical_or, kExact), KILN_BIN(logical_xor, kExact),
  };
  const std::pair<Make, Make> pairs[] = {{elementwise_floats(), floats_b()},
                                         {ints(), ints_b()},
                                         {bools(237), bools(237)},
                                         {elementwise_floats(), ints_b()},
                                         {ints(), floats_b()}};
  for (const BinaryCase& c : cases) {
    for (const auto& [ma, mb] : pairs) {
      Tensor pa = ma(Device::cpu()), pb = mb(Device::cpu());
      bool supported = true;
      try {
        (void)c.tt(pa, pb);
      } catch (const Error&) {
        supported = false;
      }
      if (!supported) continue;
      const std::string what = std::string(c.name) + " " + dtype_name(pa.dtype()) + "," + dtype_name(pb.dtype());
      EXPECT_TRUE(same_as_cpu({ma, mb}, [&](const std::vector<Tensor>& x) { return c.tt(x[0], x[1]); }, c.tol)) << what;
      if (pa.dtype() == DType::bool_) continue;
      for (double s : {2.0, -1.5, 0.5}) {
        if (std::string(c.name) == "remainder" && pa.dtype() == DType::i64 && s == 0.5) continue;
        EXPECT_TRUE(same_as_cpu({ma}, [&](const std::vector<Tensor>& x) { return c.ts(x[0], s); }, c.tol)) << what << " scalar rhs " << s;
        if (std::string(c.name) == "remainder" && pa.dtype() == DType::i64) continue;  // zeros in the divisor
        EXPECT_TRUE(same_as_cpu({ma}, [&](const std::vector<Tensor>& x) { return c.st(s, x[0]); }, c.tol)) << what << " scalar lhs " << s;
      }
    }
  }
}

TEST(VulkanElementwise, BroadcastWhereAndClamp) {
  KILN_REQUIRE_VULKAN();
  const Make grid = [](Device d) { return reshape(arange(0, 60, 1, {DType::f32, d}), std::vector<std::int64_t>{3, 4, 5}); };
  const Make row = [](Device d) { return from_vector(std::vector<float>{1, -2, 3, -4, 5}, Shape{5}, d); };
  const Make col = [](Device d) { return from_vector(std::vector<std::int64_t>{2, 3, 4, 5}, Shape{4, 1}, d); };
  const Make mask = [](Device d) { return from_vector(std::vector<bool>{true, false, true}, Shape{3, 1, 1}, d); };
  EXPECT_TRUE(same_as_cpu(
      {grid, row}, [](const std::vector<Tensor>& x) { return sub(x[0], x[1]); }, kExact));
  EXPECT_TRUE(same_as_cpu(
      {grid, col}, [](const std::vector<Tensor>& x) { return mul(x[0], x[1]); }, kExact));
  EXPECT_TRUE(same_as_cpu(
      {row, col}, [](const std::vector<Tensor>& x) { return add(x[0], x[1]); }, kExact));
  EXPECT_TRUE(same_as_cpu(
      {mask, grid, row}, [](const std::vector<Tensor>& x) { return where(x[0], x[1], x[2]); }, kExact));
  EXPECT_TRUE(same_as_cpu(
      {mask, col}, [](const std::vector<Tensor>& x) { return where(x[0], x[1], 1.5); }, kExact));
  EXPECT_TRUE(same_as_cpu(
      {mask, col}, [](const std::vector<Tensor>& x) { return where(x[0], 7.0, x[1]); }, kExact));
  for (const Make& m : {elementwise_floats(), ints()}) {
    EXPECT_TRUE(same_as_cpu(
        {m}, [](const std::vector<Tensor>& x) { return clamp(x[0], -3.0, 5.0); }, kExact));
    EXPECT_TRUE(same_as_cpu(
        {m}, [](const std::vector<Tensor>& x) { return clamp(x[0], std::nullopt, 0.5); }, kExact));
    EXPECT_TRUE(same_as_cpu(
        {m}, [](const std::vector<Tensor>& x) { return clamp(x[0], -2.0, std::nullopt); }, kExact));
  }
  // In place: the last handle's buffer takes the result.
  EXPECT_TRUE(same_as_cpu({grid}, [](const std::vector<Tensor>& x) {
    Tensor y = add(x[0], 1.0);
    for (int i = 0; i < 5; ++i) y = mul(std::move(y), 1.5);
    return y;
  }, kExact));
}

using test::FusionScope;

std::vector<double> mixed_graph(Device d) {
  Generator gen(3);
  Tensor x = to(randn(Shape{7, 300}, gen), d);
  Tensor row = to(randn(Shape{300}, gen), d);
  Tensor ints = to(cast(mul(rand(Shape{7, 1}, gen), 5.0), DType::i64), d);
  Tensor a = add(x, row);
  Tensor b = mul(a, ints);
  Tensor mask = gt(b, 0.25);
  Tensor c = where(mask, exp(neg(b)), sqrt(abs(a)));
  Tensor dd = clamp(sub(c, 0.5), -0.2, 0.4);
  Tensor g = mul(mul(x, 0.5), add(erf(mul(x, 0.7071067811865476)), 1.0));
  std::vector<double> out = host_values(c);
  for (double v : host_values(cast(mul(dd, 10.0), DType::i64))) out.push_back(v);
  for (double v : host_values(g)) out.push_back(v);
  return out;
}

// The vectorized f32 kernel: each thread takes two vec4s a grid apart, whole when both are in
// range, else element by element. Lengths from one element to several grids' worth, with
// ragged ends, must all come out right, also in place (output buffer = input buffer). The
// in-place chain is exact in IEEE f32, so its reference is computed here, element by element;
// the GELU is checked against the CPU device (its ops against PyTorch in tests/ops).
TEST(VulkanElementwise, VectorizedKernelCoversEveryElement) {
  KILN_REQUIRE_VULKAN();
  for (const std::int64_t n : {1, 3, 4, 7, 2048, 2051, 4096, 4100, 6151, 20483}) {
    SCOPED_TRACE(n);
    std::vector<float> values(static_cast<std::size_t>(n));
    const std::vector<float> specials = special_floats();
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = specials[i % specials.size()] + static_cast<float>(i / specials.size());
    const Make x = [&](Device d) { return from_vector(values, Shape{n}, d); };
    const Fn gelu_by_hand = [](const std::vector<Tensor>& t) {
      return div(mul(t[0], add(erf(div(t[0], std::sqrt(2.0))), 1.0)), 2.0);
    };
    EXPECT_TRUE(same_as_cpu({x}, gelu_by_hand, kMath));
    // In place: the only reference moves into the op, so the output takes the input's buffer.
    std::vector<double> want(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) want[i] = (values[i] + 1.0f) * 3.0f;
    const std::uint64_t reuses = counters(vk0()).inplace_reuses;
    EXPECT_TRUE(values_close(host_values(mul(add(x(vk0()), 1.0), 3.0)), want, Tolerance{0, 0}));
    EXPECT_GT(counters(vk0()).inplace_reuses, reuses);
  }
}

TEST(VulkanElementwise, FusedEqualsUnfused) {
  KILN_REQUIRE_VULKAN();
  std::vector<double> fused, plain;
  {
    FusionScope f(true, vk0());
    const EngineCounters before = counters(vk0());
    fused = mixed_graph(vk0());
    EXPECT_GT(counters(vk0()).fused_kernels, before.fused_kernels);
  }
  {
    FusionScope f(false, vk0());
    plain = mixed_graph(vk0());
  }
  EXPECT_TRUE(close(fused, plain, {1e-6, 1e-7}));
  // And both agree with the CPU.
  EXPECT_TRUE(close(fused, mixed_graph(Device::cpu()), {1e-5, 1e-6}));
}

}  // namespace
}  // namespace kiln::test
