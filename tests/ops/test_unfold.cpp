// unfold and fold against PyTorch (tests/data/gen_unfold.py) on every test device: 1 to 3
// spatial dims, strides, paddings, dilations, odd and one-pixel sizes, empty batches, -inf
// padding, integer and bool inputs, f16 and bf16 where the device has them; fold's sums are
// deterministic (the same bits run after run, and on the CPU and Vulkan alike); call-site errors
// name the op and the shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <set>
#include <string>

#include "kiln/engine/kiln.h"
#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln {
namespace {

using test::expect_error;

using test::Json;
using test::RefCase;

Window window(const Json& v) { return v.get<Window>(); }

double json_scalar(const Json& v) {
  if (v.is_string()) return v.get<std::string>() == "-inf" ? -INFINITY : INFINITY;
  return v.get<double>();
}

Tensor run_case(const RefCase& c, Tensor x) {
  const Json& a = c.attrs;
  if (c.op == "unfold")
    return unfold(std::move(x), window(a.at("kernel")), window(a.at("dilation")), window(a.at("padding")),
                  window(a.at("stride")), json_scalar(a.at("pad_value")));
  return fold(std::move(x), window(a.at("output_size")), window(a.at("kernel")), window(a.at("dilation")),
              window(a.at("padding")), window(a.at("stride")));
}

// Whether tensors of dtype t can live on `device` (f16 and bf16: Vulkan devices with 16-bit storage).
bool supports(Device device, DType t) {
  try {
    (void)zeros(Shape{1}, {t, device});
    return true;
  } catch (const Error&) {
    return false;
  }
}

class Unfold : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor f32(const Shape& s) { return full(s, 1.0, {DType::f32, dev()}); }
  Tensor i64(const Shape& s) { return full(s, 1.0, {DType::i64, dev()}); }

  // Every case of `op` whose dtype the device has; returns how many ran.
  int run_cases(const std::string& op) {
    int ran = 0;
    for (const RefCase& c : test::cases_for("unfold.json", op)) {
      const DType t = test::parse_dtype(c.inputs[0].at("dtype").get<std::string>());
      if (!supports(dev(), t)) continue;
      SCOPED_TRACE(c.name);
      const Tensor y = run_case(c, test::make_tensor(c.inputs[0], dev()));
      EXPECT_EQ(y.device(), dev());
      // unfold moves values; fold adds integers, exact in f32, and rounds their sums once.
      EXPECT_TRUE(test::matches(y, c.outputs[0], {0.0, 0.0}));
      ++ran;
    }
    return ran;
  }
};

TEST_P(Unfold, MatchesTorch) { EXPECT_GE(run_cases("unfold"), 33); }

TEST_P(Unfold, FoldMatchesTorch) { EXPECT_GE(run_cases("fold"), 20); }

// The 16-bit cases run wherever the device has the dtypes; say so when it has not.
TEST_P(Unfold, HalfTypesWhereSupported) {
  if (!supports(dev(), DType::f16) || !supports(dev(), DType::bf16))
    GTEST_SKIP() << dev().str() << " has no f16/bf16: their cases are skipped above";
  int half_cases = 0;
  for (const RefCase& c : test::load_cases("unfold.json"))
    half_cases += c.name.ends_with("_f16") || c.name.ends_with("_bf16");
  EXPECT_EQ(half_cases, 12);
}

// Windows that overlap add up in kernel-offset order in every element, whatever the thread
// count or device: the same bits run after run, and the CPU's bits on every device.
TEST_P(Unfold, FoldIsDeterministic) {
  Generator gen(7);
  // Rows of 19 and of 20 elements (the Vulkan kernel stores rows of a multiple of 4 as vectors).
  for (std::int64_t w : {19, 20}) {
    const Tensor cols_cpu = randn(Shape{2, 5 * 9, 23 * w}, gen);
    const auto run = [&](Device d) { return test::host_values(fold(to(cols_cpu, d), {23, w}, {3}, {1}, {1}, {1})); };
    const std::vector<double> first = run(dev());
    EXPECT_TRUE(test::same_bits(run(dev()), first)) << w;
    EXPECT_TRUE(test::same_bits(run(Device::cpu()), first)) << w;
  }
}

// Outputs of 16 MiB and more take the CPU's streaming path (and many workgroups on a GPU): the
// same values as each batch element unfolded alone, which the reference cases cover. Both window
// shapes: "same" (3x3, pad 1: one copy per slice) and strided rows.
TEST_P(Unfold, LargeOutputsMatchPerImageOnes) {
  Generator gen(11);
  const std::int64_t n = 8;
  const Tensor x = to(randn(Shape{n, 32, 64, 64}, gen), dev());
  for (const Window& stride : {Window{1}, Window{1, 2}}) {
    const Tensor whole = unfold(x, {3}, {1}, {1}, stride, -2.0);
    ASSERT_GE(whole.numel() * 4, std::int64_t{16} << 20);
    std::vector<Tensor> parts;
    for (std::int64_t i = 0; i < n; ++i) parts.push_back(unfold(slice(x, 0, i, i + 1), {3}, {1}, {1}, stride, -2.0));
    // randn has no NaN: == compares every bit that matters
    EXPECT_TRUE(whole.to_vector<float>().get() == cat(parts, 0).to_vector<float>().get()) << "stride " << stride.size();
  }
}

// fold is unfold's adjoint: <unfold(x), y> = <x, fold(y)> for any window.
TEST_P(Unfold, FoldIsTheAdjointOfUnfold) {
  Generator gen(3);
  struct Win {
    Shape image;
    Window kernel, dilation, padding, stride;
  };
  const Win wins[] = {{Shape{2, 3, 11}, {3}, {2}, {2}, {2}},
                      {Shape{1, 2, 9, 8}, {3, 2}, {1, 2}, {1, 1}, {2, 1}},
                      {Shape{1, 2, 5, 6, 4}, {2, 3, 2}, {2, 1, 1}, {1, 1, 0}, {1, 2, 2}}};
  for (const Win& w : wins) {
    const Tensor x = to(randn(w.image, gen), dev());
    const Tensor ux = unfold(x, w.kernel, w.dilation, w.padding, w.stride);
    const Tensor y = to(randn(ux.shape(), gen), dev());
    const Window spatial(w.image.begin() + 2, w.image.end());
    const Tensor fy = fold(y, spatial, w.kernel, w.dilation, w.padding, w.stride);
    const double lhs = sum(mul(ux, y)).item<float>().get(), rhs = sum(mul(x, fy)).item<float>().get();
    EXPECT_NEAR(lhs, rhs, 1e-4 * (1 + std::abs(lhs))) << w.image.str();
  }
}

TEST_P(Unfold, RankErrors) {
  expect_error([&] { return unfold(f32({2, 3}), {2}, {1}, {0}, {1}); }, "unfold", {"f32[2, 3]", "1 to 3 spatial dims"});
  expect_error(
      [&] {
        return unfold(f32({1, 1, 2, 2, 2, 2}), {1}, {1}, {0}, {1});
      },
      "unfold", {"f32[1, 1, 2, 2, 2, 2]", "rank 3 to 5"});
  expect_error(
      [&] {
        return fold(f32({9, 16}), {4, 4}, {3}, {1}, {1}, {1});
      },
      "fold", {"f32[9, 16]", "[N, C * prod(kernel), L]"});
  expect_error([&] { return fold(f32({1, 9, 16}), {}, {3}, {1}, {1}, {1}); }, "fold", {"output_size []", "1 to 3"});
  expect_error(
      [&] {
        return fold(f32({1, 9, 16}), {1, 1, 2, 8}, {1}, {1}, {0}, {1});
      },
      "fold", {"output_size [1, 1, 2, 8]", "1 to 3"});
}

TEST_P(Unfold, WindowParameterErrors) {
  const Tensor x = f32({1, 2, 5, 5});
  expect_error([&] { return unfold(x, {3, 0}, {1}, {0}, {1}); }, "unfold", {"kernel sizes must be positive", "[3, 0]"});
  expect_error([&] { return unfold(x, {3}, {0}, {0}, {1}); }, "unfold",
               {"dilations must be positive", "dilation [0, 0]"});
  expect_error(
      [&] {
        return unfold(x, {3}, {1}, {1, -1}, {1});
      },
      "unfold", {"paddings must not be negative", "padding [1, -1]"});
  expect_error([&] { return unfold(x, {3}, {1}, {0}, {-2}); }, "unfold", {"strides must be positive", "[-2, -2]"});
  expect_error(
      [&] {
        return unfold(x, {3, 3, 3}, {1}, {0}, {1});
      },
      "unfold", {"kernel [3, 3, 3]", "1 or 2 values", "f32[1, 2, 5, 5]"});
  expect_error([&] { return unfold(x, {3}, {1}, {0}, {}); }, "unfold", {"stride []", "1 or 2 values"});
  expect_error(
      [&] {
        return fold(f32({1, 9, 9}), {5, 5}, {3}, {1, 1, 1}, {0}, {1});
      },
      "fold", {"dilation [1, 1, 1]", "output_size [5, 5]"});
  expect_error([&] { return fold(f32({1, 9, 9}), {5, 5}, {3}, {1}, {0}, {0}); }, "fold", {"strides must be positive"});
}

TEST_P(Unfold, WindowLargerThanThePaddedInput) {
  expect_error(
      [&] {
        return unfold(f32({1, 1, 4, 6}), {5, 3}, {1}, {0}, {1});
      },
      "unfold", {"larger than the padded input f32[1, 1, 4, 6]", "spatial dim 0", "size 4 + 2 * 0"});
  expect_error(
      [&] {
        return unfold(f32({2, 3, 7}), {3}, {5}, {1}, {1});
      },
      "unfold", {"larger than the padded input f32[2, 3, 7]", "dilation [5]"});
  // A window exactly as large as the padded input is one window.
  EXPECT_EQ(unfold(f32({2, 3, 7}), {3}, {4}, {1}, {1}).shape(), (Shape{2, 9, 1}));
  expect_error([&] { return unfold(f32({1, 1, 3, 3, 3}), {1, 1, 4}, {1}, {0}, {1}); }, "unfold", {"spatial dim 2"});
  // Parameters whose window arithmetic would overflow 64 bits are no window either.
  expect_error(
      [&] {
        return unfold(f32({1, 1, 4}), {1LL << 62}, {1LL << 62}, {0}, {1});
      },
      "unfold", {"larger than the padded input"});
  expect_error(
      [&] {
        return fold(f32({1, 9, 1}), {2, 2}, {3}, {1}, {0}, {1});
      },
      "fold", {"larger than the padded output [2, 2]", "spatial dim 0"});
  expect_error(
      [&] {
        return fold(f32({1, 1, 1}), {0}, {1}, {1}, {0}, {1});
      },
      "fold", {"output_size [0] must be positive"});
}

TEST_P(Unfold, FoldColumnsMustMatchTheWindow) {
  expect_error(
      [&] {
        return fold(f32({1, 10, 16}), {4, 4}, {3}, {1}, {1}, {1});
      },
      "fold", {"f32[1, 10, 16]", "dim 1 (10)", "prod(kernel) = 9"});
  expect_error(
      [&] {
        return fold(f32({1, 9, 15}), {4, 4}, {3}, {1}, {1}, {1});
      },
      "fold", {"f32[1, 9, 15]", "15 windows", "[4, 4] = 16"});
  expect_error(
      [&] {
        return fold(i64({1, 9, 16}), {4, 4}, {3}, {1}, {1}, {1});
      },
      "fold", {"floating", "i64[1, 9, 16]"});
  expect_error(
      [&] {
        return fold(full({1, 9, 16}, 1.0, {DType::bool_, dev()}), {4, 4}, {3}, {1}, {1}, {1});
      },
      "fold", {"floating", "bool[1, 9, 16]"});
}

TEST_P(Unfold, IntegerPadValueMustFit) {
  expect_error(
      [&] {
        return unfold(i64({1, 1, 3, 3}), {2}, {1}, {1}, {1}, -INFINITY);
      },
      "unfold", {"pad value", "i64[1, 1, 3, 3]"});
  // Without padding the value is never written: any value goes.
  EXPECT_EQ(unfold(i64({1, 1, 3, 3}), {2}, {1}, {0}, {1}, -INFINITY).shape(), (Shape{1, 4, 4}));
}

TEST_P(Unfold, UndefinedInputs) {
  expect_error([&] { return unfold(Tensor{}, {2}, {1}, {0}, {1}); }, "unfold", {"undefined"});
  expect_error([&] { return fold(Tensor{}, {2}, {1}, {1}, {0}, {1}); }, "fold", {"undefined"});
}

// A case that no test above runs would be silently skipped.
TEST(UnfoldReferenceData, EveryCaseIsRun) {
  const std::set<std::string> run = {"unfold", "fold"};
  for (const RefCase& c : test::load_cases("unfold.json")) EXPECT_TRUE(run.count(c.op)) << c.name << ": " << c.op;
}

INSTANTIATE_TEST_SUITE_P(Devices, Unfold, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
