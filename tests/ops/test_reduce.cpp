// The reduce family against PyTorch (tests/data/gen_reduce.py -> reduce.json), its call-site
// errors and in-place reuse. test_reduce_determinism.cpp checks thread-count independence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/engine/kiln.h"
#include "support/expect_error.h"
#include "support/reduce_cases.h"

namespace kiln {
namespace {

using test::RefCase;
using test::Tolerance;

// ramp() of gen_reduce.py: integers / 64 are exact in f32, so both sides hold the same bits.
std::vector<float> ramp_values(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919) % 2001 - 1000) / 64.0f;
  return v;
}

Tensor input_of(const RefCase& c, Device device) {
  if (!c.inputs.empty()) return test::make_tensor(c.inputs[0], device);
  Shape shape;
  for (const auto& d : c.attrs.at("ramp")) shape.push_back(d.get<std::int64_t>());
  std::vector<float> v = ramp_values(shape.numel());
  for (const auto& k : c.attrs.value("nan_at", test::Json::array()))
    v[k.get<std::size_t>()] = std::numeric_limits<float>::quiet_NaN();
  return from_vector(std::move(v), shape, device);
}

// The listed rows of a 2-d f32 result (cases whose reference keeps only those rows).
Tensor rows_of(const Tensor& t, const test::Json& rows) {
  const std::int64_t width = t.shape()[1];
  const std::vector<float> all = t.to_vector<float>().get();
  std::vector<float> picked;
  for (const auto& r : rows) {
    const auto at = all.begin() + r.get<std::int64_t>() * width;
    picked.insert(picked.end(), at, at + width);
  }
  return from_vector(std::move(picked), Shape{static_cast<std::int64_t>(rows.size()), width});
}

// Integer and bool results must match exactly (matches() ignores the tolerance for them).
Tolerance tolerance_of(const std::string& op) {
  if (op == "prod") return {1e-4, 1e-5};                // products of ~24 values drift further
  if (op == "var" || op == "std") return {1e-4, 1e-5};  // f64 accumulation vs torch's Welford
  if (op == "cumsum") return {1e-5, 1e-4};              // running sums of ramp values reach ~1e3
  if (op == "softmax" || op == "log_softmax") return {1e-5, 1e-6};
  return {1e-5, 1e-5};  // sum mean max min logsumexp
}

class ReduceReference : public ::testing::TestWithParam<Device> {
 protected:
  void check_op(const std::string& op) {
    const std::vector<RefCase> cases = test::cases_for("reduce.json", op);
    ASSERT_FALSE(cases.empty()) << "no reference cases for " << op;
    for (const RefCase& c : cases) {
      SCOPED_TRACE(c.name);
      Tensor out = test::run_reduce_case(c, input_of(c, GetParam()));
      if (c.attrs.contains("rows")) out = rows_of(out, c.attrs.at("rows"));
      EXPECT_TRUE(test::matches(out, c.outputs[0], tolerance_of(op)));
    }
  }
};

TEST_P(ReduceReference, Sum) { check_op("sum"); }
TEST_P(ReduceReference, Mean) { check_op("mean"); }
TEST_P(ReduceReference, Prod) { check_op("prod"); }
TEST_P(ReduceReference, Max) { check_op("max"); }
TEST_P(ReduceReference, Min) { check_op("min"); }
TEST_P(ReduceReference, Argmax) { check_op("argmax"); }
TEST_P(ReduceReference, Argmin) { check_op("argmin"); }
TEST_P(ReduceReference, Var) { check_op("var"); }
TEST_P(ReduceReference, Std) { check_op("std"); }
TEST_P(ReduceReference, Any) { check_op("any"); }
TEST_P(ReduceReference, All) { check_op("all"); }
TEST_P(ReduceReference, Logsumexp) { check_op("logsumexp"); }
TEST_P(ReduceReference, Cumsum) { check_op("cumsum"); }
TEST_P(ReduceReference, Softmax) { check_op("softmax"); }
TEST_P(ReduceReference, LogSoftmax) { check_op("log_softmax"); }

INSTANTIATE_TEST_SUITE_P(Devices, ReduceReference, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

// --- call-site errors ------------------------------------------------------------------------

class ReduceErrors : public ::testing::TestWithParam<Device> {};

using test::expect_error;

TEST_P(ReduceErrors, DimOutOfRange) {
  Tensor x = zeros(Shape{2, 3}, {DType::f32, GetParam()});
  expect_error([&] { return sum(x, {2}); }, "sum", {"dim 2", "f32[2, 3]"});
  expect_error([&] { return max(x, {-3}, true); }, "max", {"dim -3", "f32[2, 3]"});
  expect_error([&] { return argmax(x, 5); }, "argmax", {"dim 5", "f32[2, 3]"});
  expect_error([&] { return cumsum(x, -3); }, "cumsum", {"dim -3", "f32[2, 3]"});
  expect_error([&] { return softmax(x, 2); }, "softmax", {"dim 2", "f32[2, 3]"});
  Tensor s = scalar(1.0, {DType::f32, GetParam()});
  expect_error([&] { return sum(s, {1}); }, "sum", {"dim 1", "f32[]"});
}

TEST_P(ReduceErrors, DuplicateDims) {
  Tensor x = zeros(Shape{2, 3, 4}, {DType::f32, GetParam()});
  expect_error([&] { return sum(x, {0, 0}); }, "sum", {"dim 0", "more than once", "f32[2, 3, 4]"});
  expect_error([&] { return var(x, {2, -1}); }, "var", {"dim 2", "more than once", "f32[2, 3, 4]"});
}

TEST_P(ReduceErrors, FloatOnlyOpsRejectIntegers) {
  Tensor i = zeros(Shape{2, 3}, {DType::i64, GetParam()});
  Tensor b = zeros(Shape{4}, {DType::bool_, GetParam()});
  expect_error([&] { return mean(i); }, "mean", {"i64[2, 3]", "floating point"});
  expect_error([&] { return mean(b, {0}); }, "mean", {"bool[4]"});
  expect_error([&] { return var(i, {1}); }, "var", {"i64[2, 3]"});
  expect_error([&] { return kiln::std(b); }, "std", {"bool[4]"});
  expect_error([&] { return softmax(i, 1); }, "softmax", {"i64[2, 3]"});
  expect_error([&] { return log_softmax(b, 0); }, "log_softmax", {"bool[4]"});
  expect_error([&] { return argmax(b); }, "argmax", {"bool[4]"});
}

TEST_P(ReduceErrors, EmptyExtentHasNoMaximum) {
  Tensor x = zeros(Shape{2, 0}, {DType::f32, GetParam()});
  expect_error([&] { return max(x, {1}); }, "max", {"dim 1", "size 0", "f32[2, 0]"});
  expect_error([&] { return min(x); }, "min", {"size 0", "f32[2, 0]"});
  expect_error([&] { return argmax(x, 1); }, "argmax", {"size 0", "f32[2, 0]"});
  expect_error([&] { return argmin(x); }, "argmin", {"empty", "f32[2, 0]"});
  // Reducing a non-empty dim of an empty tensor is fine (torch agrees): the result is empty.
  EXPECT_EQ(max(x, {0}).shape(), (Shape{0}));
}

INSTANTIATE_TEST_SUITE_P(Devices, ReduceErrors, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

// --- in-place reuse -----------------------------------------------------------------------

class ReduceBehaviour : public ::testing::TestWithParam<Device> {};

// softmax/log_softmax/cumsum may write into the input's buffer: the values must not change.
TEST_P(ReduceBehaviour, InPlaceGivesTheSameValues) {
  const Shape shape{37, 300};
  const std::vector<float> v = ramp_values(shape.numel());
  using UnaryDim = Tensor (*)(Tensor, std::int64_t);
  for (UnaryDim op :
       {static_cast<UnaryDim>(softmax), static_cast<UnaryDim>(log_softmax), static_cast<UnaryDim>(cumsum)}) {
    for (std::int64_t dim : {0, 1}) {
      Tensor kept = from_vector(v, shape, GetParam());
      const std::vector<float> expected = op(kept, dim).to_vector<float>().get();
      const std::uint64_t before = counters(GetParam()).inplace_reuses;
      Tensor handed_over = from_vector(v, shape, GetParam());
      const std::vector<float> got = op(std::move(handed_over), dim).to_vector<float>().get();
      EXPECT_EQ(counters(GetParam()).inplace_reuses, before + 1) << "dim " << dim;
      EXPECT_EQ(got, expected) << "dim " << dim;
    }
  }
}

// f32 lanes and fixed blocks keep a sum of 4M values within a few ulps of an f64 sum of them.
TEST_P(ReduceBehaviour, LargeSumIsAccurate) {
  Generator gen(7);
  Tensor x = normal(Shape{1 << 22}, 0.5, 2.0, gen, {DType::f32, GetParam()});
  const std::vector<float> xs = x.to_vector<float>().get();
  double exact = 0;
  for (float f : xs) exact += f;
  const double got = sum(x).item<float>().get();
  EXPECT_NEAR(got, exact, 4e-7 * std::abs(exact) + 1e-2);
  EXPECT_NEAR(mean(x).item<float>().get(), exact / static_cast<double>(xs.size()), 1e-6);
}

// Over all dims but the channels of [N, C, H, W] (a batch norm's statistics, a conv bias's
// gradient; on the CPU reduced as rows of H * W, then merged over N, without a gather): f32
// sums within a few ulps of f64 sums, max exactly, i64 sums exactly.
TEST_P(ReduceBehaviour, AllDimsButTheChannelsMatchF64Sums) {
  const Shape shape{8, 16, 12, 45};
  Generator gen(8);
  const Tensor x = normal(shape, 0.5, 2.0, gen, {DType::f32, GetParam()});
  const std::vector<float> xs = x.to_vector<float>().get();
  const std::vector<float> sums = sum(x, {0, 2, 3}).to_vector<float>().get();
  const std::vector<float> means = mean(x, {0, 2, 3}).to_vector<float>().get();
  const std::vector<float> maxes = max(x, {0, 2, 3}).to_vector<float>().get();
  const std::vector<std::int64_t> counts = sum(gt(x, 0.5), {0, 2, 3}).to_vector<std::int64_t>().get();
  const std::int64_t per_channel = shape[0] * shape[2] * shape[3], inner = shape[2] * shape[3];
  for (std::int64_t c = 0; c < shape[1]; ++c) {
    double exact = 0;
    float top = -INFINITY;
    std::int64_t above = 0;
    for (std::int64_t n = 0; n < shape[0]; ++n)
      for (std::int64_t i = 0; i < inner; ++i) {
        const float v = xs[static_cast<std::size_t>((n * shape[1] + c) * inner + i)];
        exact += v;
        top = std::max(top, v);
        above += v > 0.5f;
      }
    const auto k = static_cast<std::size_t>(c);
    EXPECT_NEAR(sums[k], exact, 1e-5 * std::abs(exact) + 1e-3) << "channel " << c;
    EXPECT_NEAR(means[k], exact / static_cast<double>(per_channel), 1e-6) << "channel " << c;
    EXPECT_EQ(maxes[k], top) << "channel " << c;
    EXPECT_EQ(counts[k], above) << "channel " << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ReduceBehaviour, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
