// Elementwise behaviour beyond single values: in-place reuse, bit-identical tails, large and
// broadcast tiles run in parallel, kernel errors, and the call-site errors of the family.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "kiln/ops/elementwise_rules.h"
#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln {
namespace {

class ElementwiseBehaviour : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor f32s(const std::vector<float>& v) { return from_vector(v, Shape{static_cast<std::int64_t>(v.size())}, dev()); }
};

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// ---- in-place reuse -------------------------------------------------------------------------

TEST_P(ElementwiseBehaviour, InPlaceGivesTheSameValues) {
  const std::vector<float> v = random_floats(3000, 1);
  const std::vector<float> w = random_floats(1000, 2);
  using Op = std::function<Tensor(Tensor)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"add_scalar", [](Tensor x) { return add(std::move(x), 1.0); }},
      {"exp", [](Tensor x) { return exp(std::move(x)); }},
      {"gelu", [](Tensor x) { return gelu(std::move(x)); }},
      {"sub_lhs_scalar", [](Tensor x) { return sub(0.5, std::move(x)); }},
      {"mul_broadcast", [&](Tensor x) { return mul(std::move(x), from_vector(w, Shape{1000}, dev())); }},
      {"clamp", [](Tensor x) { return clamp(std::move(x), -1.0, 1.0); }},
  };
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    Tensor shared = from_vector(v, Shape{3, 1000}, dev());
    Tensor keep = shared;  // a second handle: the op may not write into this buffer
    const std::vector<float> expected = op(shared).to_vector<float>().get();
    const std::uint64_t before = counters(dev()).inplace_reuses;
    Tensor owned = from_vector(v, Shape{3, 1000}, dev());
    Tensor y = op(std::move(owned));
    EXPECT_EQ(test::float_bits(y.to_vector<float>().get()), test::float_bits(expected));
    EXPECT_EQ(counters(dev()).inplace_reuses, before + 1);
    EXPECT_EQ(test::float_bits(keep.to_vector<float>().get()), test::float_bits(v));
  }
}

TEST_P(ElementwiseBehaviour, InPlaceAcrossACast) {
  // eq(bool, f32) computes in f32 and writes bool: the bool input's buffer may be the output.
  Tensor b = from_vector(std::vector<bool>{true, false, true, false}, Shape{4}, dev());
  Tensor f = f32s({1.0f, 0.0f, 0.5f, 1.0f});
  Tensor y = eq(std::move(b), f);
  EXPECT_EQ(y.to_vector<bool>().get(), (std::vector<bool>{true, true, false, false}));
}

TEST_P(ElementwiseBehaviour, RepeatedInPlaceAdd) {
  Tensor x = zeros(Shape{1 << 16}, {DType::f32, dev()});
  for (int i = 0; i < 10; ++i) x = add(std::move(x), 1.0);
  for (float v : x.to_vector<float>().get()) ASSERT_EQ(v, 10.0f);
}

// ---- bit identity of the tail ---------------------------------------------------------------

// Element i of a result must not depend on where i falls (vector body or tail) nor on n.
TEST_P(ElementwiseBehaviour, TailGivesTheSameBitsAsTheBody) {
  const std::size_t n = 1024 + 5;
  const std::vector<float> v = random_floats(n, 3);
  const std::vector<float> e = random_floats(n, 4, 1.0f);
  using Op = std::function<Tensor(Tensor, Tensor)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"exp", [](Tensor x, Tensor) { return exp(std::move(x)); }},
      {"tanh", [](Tensor x, Tensor) { return tanh(std::move(x)); }},
      {"gelu", [](Tensor x, Tensor) { return gelu(std::move(x)); }},
      {"sigmoid", [](Tensor x, Tensor) { return sigmoid(std::move(x)); }},
      {"softplus", [](Tensor x, Tensor) { return softplus(std::move(x)); }},
      {"log1p", [](Tensor x, Tensor) { return log1p(abs(std::move(x))); }},
      {"pow", [](Tensor x, Tensor y) { return pow(abs(std::move(x)), std::move(y)); }},
      {"atan2", [](Tensor x, Tensor y) { return atan2(std::move(x), std::move(y)); }},
      {"remainder", [](Tensor x, Tensor y) { return remainder(std::move(x), std::move(y)); }},
      {"sub_scalar", [](Tensor x, Tensor) { return sub(std::move(x), 0.1); }},
  };
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    const std::vector<std::uint32_t> full = test::float_bits(op(f32s(v), f32s(e)).to_vector<float>().get());
    // Runs of 37 elements starting at several offsets: each lane position meets the tail.
    for (std::size_t start : {std::size_t{0}, std::size_t{5}, std::size_t{13}, std::size_t{990}}) {
      const std::vector<float> vs(v.begin() + start, v.begin() + start + 37);
      const std::vector<float> es(e.begin() + start, e.begin() + start + 37);
      const std::vector<std::uint32_t> part = test::float_bits(op(f32s(vs), f32s(es)).to_vector<float>().get());
      EXPECT_TRUE(std::equal(part.begin(), part.end(), full.begin() + start)) << "run at " << start;
    }
    // One element at a time: every lane position of the first vectors, and the last element.
    std::vector<std::size_t> singles(37);
    std::iota(singles.begin(), singles.end(), std::size_t{0});
    singles.push_back(n - 1);
    for (std::size_t i : singles) {
      const std::vector<std::uint32_t> one = test::float_bits(op(f32s({v[i]}), f32s({e[i]})).to_vector<float>().get());
      EXPECT_EQ(one[0], full[i]) << "element " << i;
    }
  }
}

// ---- large and broadcast outputs (parallel tiles) -------------------------------------------

TEST_P(ElementwiseBehaviour, LargeBroadcastMatchesElementByElement) {
  const std::int64_t rows = 300, cols = 257;  // 77k elements: parallel, tiles shorter than kTile
  const std::vector<float> a = random_floats(static_cast<std::size_t>(rows * cols), 5);
  const std::vector<float> b = random_floats(static_cast<std::size_t>(cols), 6);
  const std::vector<float> c = random_floats(static_cast<std::size_t>(rows), 7);
  Tensor ta = from_vector(a, Shape{rows, cols}, dev());
  Tensor tb = from_vector(b, Shape{cols}, dev());
  Tensor tc = from_vector(c, Shape{rows, 1}, dev());
  const std::vector<float> ab = add(ta, tb).to_vector<float>().get();
  const std::vector<float> cb = mul(tc, tb).to_vector<float>().get();
  const std::vector<bool> gt_ = gt(ta, tc).to_vector<bool>().get();
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * cols + j);
      ASSERT_EQ(ab[k], a[k] + b[j]) << i << "," << j;
      ASSERT_EQ(cb[k], c[i] * b[j]) << i << "," << j;
      ASSERT_EQ(gt_[k], a[k] > c[i]) << i << "," << j;
    }
  }
}

TEST_P(ElementwiseBehaviour, LargeMixedDtypesMatchElementByElement) {
  const std::int64_t n = 100003;  // many full tiles and a ragged last one
  std::vector<std::int64_t> iv(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) iv[static_cast<std::size_t>(i)] = (i * 7919) % 2001 - 1000;
  const std::vector<float> fv = random_floats(static_cast<std::size_t>(n), 8);
  Tensor ti = from_vector(iv, Shape{n}, dev());
  Tensor tf = from_vector(fv, Shape{n}, dev());
  const std::vector<float> sum = add(ti, tf).to_vector<float>().get();
  const std::vector<std::int64_t> rem = remainder(ti, 7.0).to_vector<std::int64_t>().get();
  for (std::size_t i = 0; i < iv.size(); ++i) {
    ASSERT_EQ(sum[i], static_cast<float>(iv[i]) + fv[i]) << i;
    ASSERT_EQ(rem[i], ((iv[i] % 7) + 7) % 7) << i;
  }
}

// Outputs of 8 MiB and more go out through non-temporal stores; rows of 2501 elements put tile
// boundaries off cache lines, so partial lines at both ends of a tile are exercised.
TEST_P(ElementwiseBehaviour, LargeOutputsWithRaggedRowsMatchElementByElement) {
  const std::int64_t rows = 1100, cols = 2501;  // 2.75M elements: 11 MB of f32, 2.75 MB of bool
  const std::vector<float> a = random_floats(static_cast<std::size_t>(rows * cols), 9);
  const std::vector<float> b = random_floats(static_cast<std::size_t>(cols), 10);
  Tensor ta = from_vector(a, Shape{rows, cols}, dev());
  Tensor tb = from_vector(b, Shape{cols}, dev());
  const std::vector<float> diff = sub(ta, tb).to_vector<float>().get();
  std::vector<std::int64_t> iv(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<std::int64_t>(i % 1000) - 500;
  const std::vector<std::int64_t> sq =
      square(from_vector(iv, Shape{rows, cols}, dev())).to_vector<std::int64_t>().get();  // 22 MB of i64
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * cols + j);
      ASSERT_EQ(diff[k], a[k] - b[static_cast<std::size_t>(j)]) << i << "," << j;
      ASSERT_EQ(sq[k], iv[k] * iv[k]) << i << "," << j;
    }
  }
}

// ---- kernel errors and integer corner cases -------------------------------------------------

TEST_P(ElementwiseBehaviour, IntegerRemainderByZeroFailsTheFuture) {
  Tensor a = from_vector(std::vector<std::int64_t>{5, 6, 7}, Shape{3}, dev());
  Tensor b = from_vector(std::vector<std::int64_t>{1, 0, 2}, Shape{3}, dev());
  Tensor y = remainder(a, b);
  try {
    (void)y.to_vector<std::int64_t>().get();
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "remainder");
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
  // The engine keeps serving: a later op on the same inputs runs.
  EXPECT_EQ(add(a, b).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{6, 6, 9}));
  // Found by one of many parallel tiles, the error still reaches the future.
  std::vector<std::int64_t> divisors(200000, 3);
  divisors[150001] = 0;
  Tensor big = remainder(full(Shape{200000}, 7, {DType::i64, dev()}), from_vector(divisors, Shape{200000}, dev()));
  EXPECT_THROW((void)big.to_vector<std::int64_t>().get(), Error);
}

TEST_P(ElementwiseBehaviour, IntegerCornerCasesWrapLikeTwosComplement) {
  // PyTorch itself traps on i64 min % -1 (so this is not in the reference data); Python's
  // answer, and kiln's, is 0. Overflowing add, neg and abs wrap as in PyTorch.
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t hi = std::numeric_limits<std::int64_t>::max();
  Tensor m = from_vector(std::vector<std::int64_t>{lo, hi}, Shape{2}, dev());
  EXPECT_EQ(remainder(m, -1.0).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{0, 0}));
  EXPECT_EQ(add(m, 1.0).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{lo + 1, lo}));
  EXPECT_EQ(neg(m).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{lo, -hi}));
  EXPECT_EQ(abs(m).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{lo, hi}));
}

// ---- result dtypes --------------------------------------------------------------------------

TEST_P(ElementwiseBehaviour, ResultDtypesFollowPromotion) {
  Tensor i = from_vector(std::vector<std::int64_t>{1, 2}, Shape{2}, dev());
  Tensor f = f32s({1.0f, 2.0f});
  Tensor b = from_vector(std::vector<bool>{true, false}, Shape{2}, dev());
  EXPECT_EQ(add(i, f).dtype(), DType::f32);
  EXPECT_EQ(add(i, 2.0).dtype(), DType::i64);
  EXPECT_EQ(add(i, 2.5).dtype(), DType::f32);
  EXPECT_EQ(add(b, b).dtype(), DType::bool_);
  EXPECT_EQ(add(b, 3.0).dtype(), DType::i64);
  EXPECT_EQ(div(i, i).dtype(), DType::f32);
  EXPECT_EQ(exp(i).dtype(), DType::f32);
  EXPECT_EQ(eq(i, f).dtype(), DType::bool_);
  EXPECT_EQ(logical_and(f, i).dtype(), DType::bool_);
  EXPECT_EQ(clamp(i, 0.5, std::nullopt).dtype(), DType::f32);
  EXPECT_EQ(where(b, i, 2.5).dtype(), DType::f32);
  EXPECT_EQ(cast(f, DType::i64).dtype(), DType::i64);
}

TEST(ElementwiseRules, ComputeDtypes) {
  const auto compute = [](OpKind k, std::vector<DType> in, OpAttrs a = {}) {
    return elementwise_compute_dtype(k, in, a);
  };
  OpAttrs half;
  half.scalar = 2.5;
  half.scalar_side = ScalarSide::Rhs;
  OpAttrs two = half;
  two.scalar = 2.0;
  EXPECT_EQ(compute(OpKind::add, {DType::i64, DType::f32}), DType::f32);
  EXPECT_EQ(compute(OpKind::add, {DType::i64}, half), DType::f32);
  EXPECT_EQ(compute(OpKind::add, {DType::i64}, two), DType::i64);
  EXPECT_EQ(compute(OpKind::exp, {DType::i64}), DType::f32);
  EXPECT_EQ(compute(OpKind::eq, {DType::i64, DType::f32}), DType::f32);
  EXPECT_EQ(elementwise_output_dtype(OpKind::eq, DType::f32), DType::bool_);
  EXPECT_EQ(compute(OpKind::logical_or, {DType::f32, DType::i64}), DType::bool_);
  EXPECT_EQ(compute(OpKind::square, {DType::bool_}), DType::i64);
  EXPECT_EQ(compute(OpKind::where, {DType::bool_, DType::i64, DType::f32}), DType::f32);
  EXPECT_EQ(elementwise_operand_dtype(OpKind::where, 0, DType::f32), DType::bool_);
  EXPECT_EQ(elementwise_operand_dtype(OpKind::where, 1, DType::f32), DType::f32);
  EXPECT_FALSE(is_whole_scalar(std::ldexp(1.0, 63)));
  EXPECT_TRUE(is_whole_scalar(-std::ldexp(1.0, 62)));
  EXPECT_FALSE(is_whole_scalar(std::numeric_limits<double>::quiet_NaN()));
}

// ---- call-site errors -----------------------------------------------------------------------

// Runs `fn`, which must throw kiln::Error for `op` with every string of `needles` in its message.
using test::expect_error;

TEST_P(ElementwiseBehaviour, CallSiteErrors) {
  Tensor f23 = zeros(Shape{2, 3}, {DType::f32, dev()});
  Tensor f4 = zeros(Shape{4}, {DType::f32, dev()});
  Tensor b3 = zeros(Shape{3}, {DType::bool_, dev()});
  Tensor i3 = zeros(Shape{3}, {DType::i64, dev()});
  expect_error([&] { (void)add(f23, f4); }, "add", {"[2, 3]", "[4]", "cannot be broadcast"});
  expect_error([&] { (void)where(b3, f23, f4); }, "where", {"[4]"});
  expect_error([&] { (void)abs(b3); }, "abs", {"bool[3]"});
  expect_error([&] { (void)neg(b3); }, "neg", {"bool[3]"});
  expect_error([&] { (void)relu(b3); }, "relu", {"bool[3]"});
  expect_error([&] { (void)sub(b3, i3); }, "sub", {"bool[3]", "i64[3]"});
  expect_error([&] { (void)sub(1.0, b3); }, "sub", {"bool[3]"});
  expect_error([&] { (void)pow(b3, b3); }, "pow", {"bool[3]"});
  expect_error([&] { (void)remainder(b3, b3); }, "remainder", {"bool[3]"});
  expect_error([&] { (void)pow(i3, -2.0); }, "pow", {"negative", "i64[3]"});
  if (dev() == Device::cpu()) {  // f16/bf16 exist on Vulkan devices (tests/devices/vulkan)
    expect_error([&] { (void)cast(f4, DType::f16); }, "cast", {"f32[4]", "f16", "cpu"});
    expect_error([&] { (void)cast(f4, DType::bf16); }, "cast", {"f32[4]", "bf16", "cpu"});
  }
  expect_error([&] { (void)clamp(f23, std::nullopt, std::nullopt); }, "clamp", {"f32[2, 3]", "min and max"});
  expect_error([&] { (void)where(i3, f23, f23); }, "where", {"i64[3]", "bool"});
  expect_error([&] { (void)where(b3, Tensor{}, 1.0); }, "where", {"undefined"});
  expect_error([&] { (void)exp(Tensor{}); }, "exp", {"undefined"});
}

INSTANTIATE_TEST_SUITE_P(Devices, ElementwiseBehaviour, ::testing::ValuesIn(test::test_devices()),
                         test::device_param_name);

}  // namespace
}  // namespace kiln
