// Convolution and transposed convolution against PyTorch (tests/data/gen_conv.py) on every test
// device, 16-bit floats on Vulkan, and the call-site errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "support/conv_calls.h"
#include "support/expect_error.h"
#include "support/fusion_scope.h"
#include "support/weight_packing.h"

namespace kiln {
namespace {

using test::expect_error;

using test::matches;
using test::Tolerance;

// Inputs are multiples of 1/8 and sums short: exact in f32 but for the summation order.
constexpr Tolerance kConvTolerance{1e-5, 1e-5};

bool is_conv(const std::string& op) { return op.rfind("conv", 0) == 0; }

std::vector<Tensor> inputs_of(const test::RefCase& c, Device d) {
  std::vector<Tensor> in;
  for (const auto& t : c.inputs) in.push_back(test::make_tensor(t, d));
  return in;
}

class Conv : public ::testing::TestWithParam<Device> {};

TEST_P(Conv, MatchesTorch) {
  int count = 0;
  for (const auto& c : test::load_cases("conv.json")) {
    if (!is_conv(c.op)) continue;
    SCOPED_TRACE(c.name);
    ++count;
    const std::vector<Tensor> out = test::call_conv_op(c.op, c.attrs, inputs_of(c, GetParam()));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(matches(out[0], c.outputs[0], kConvTolerance));
  }
  EXPECT_GE(count, 35);
}

// A served model's weights: one weight tensor convolution after convolution. From its second
// convolution on, the CPU keeps the weight packed beside its buffer (devices/cpu/conv_weights.h)
// instead of packing it each call; every round still gives PyTorch's values.
TEST_P(Conv, RepeatedWithOneWeightMatchTorch) {
  const Device d = GetParam();
  const std::uint64_t packed_before = counters(d).weights_packed;
  std::uint64_t convolutions = 0;
  for (const auto& c : test::load_cases("conv.json")) {
    if (!is_conv(c.op) || c.op.find("transpose") != std::string::npos) continue;
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> in = inputs_of(c, d);
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      const std::vector<Tensor> out = test::call_conv_op(c.op, c.attrs, in);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(matches(out[0], c.outputs[0], kConvTolerance));
      if (round == 0 && out[0].numel() > 0) ++convolutions;  // an empty output packs nothing
    }
  }
  EXPECT_GE(convolutions, 20u);
  // Each weight packed to be kept once, on its second convolution (on a GPU, or with packing off, never).
  EXPECT_EQ(counters(d).weights_packed - packed_before,
            d.kind == DeviceKind::cpu && test::weight_packing_on() ? convolutions : 0u);
}

// f16 and bf16 where the device takes them: the f32 reference rounded once per product sum,
// so within the dtype's resolution of the largest value.
TEST_P(Conv, HalfPrecisionOnVulkan) {
  const Device d = GetParam();
  if (d.kind == DeviceKind::cpu) GTEST_SKIP() << "16-bit floats are a Vulkan feature";
  const auto cases = test::load_cases("conv.json");
  for (const char* name : {"conv2d_groups", "conv1d_same_even", "conv_transpose2d_strided"}) {
    const test::RefCase* c = test::find_case(cases, name);
    ASSERT_NE(c, nullptr) << name;
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(std::string(name) + " " + dtype_name(t));
      std::vector<Tensor> in;
      for (const Tensor& x : inputs_of(*c, d)) in.push_back(cast(x, t));
      const Tensor out = test::call_conv_op(c->op, c->attrs, in).at(0);
      EXPECT_EQ(out.dtype(), t);
      const std::vector<double> want = test::json_values(c->outputs[0]);
      EXPECT_TRUE(test::values_close(test::host_values(out), want, {t == DType::f16 ? 2e-3 : 1.6e-2, 0.1}));
    }
  }
}

// The bias add lands on the matmul's [N, K, L] product: fused or not, the values agree.
TEST_P(Conv, ResultIsIndependentOfFusion) {
  const auto cases = test::load_cases("conv.json");
  const test::RefCase* c = test::find_case(cases, "conv2d_groups");
  ASSERT_NE(c, nullptr);
  const std::vector<Tensor> in = inputs_of(*c, GetParam());
  const auto run = [&](bool fusion) {
    test::FusionScope scope(fusion, GetParam());
    return test::host_values(relu(test::call_conv_op(c->op, c->attrs, in).at(0)));
  };
  const std::vector<double> fused = run(true);
  EXPECT_TRUE(test::same_bits(fused, run(false)));
}

TEST_P(Conv, CallSiteErrors) {
  const Device d = GetParam();
  const auto z = [d](Shape s, DType t = DType::f32) { return zeros(s, {t, d}); };
  const Tensor x = z({1, 4, 5, 5});
  expect_error([&] { (void)conv2d(z({4, 5}), z({2, 4, 3, 3})); }, "conv2d", {"[N, C, ...]", "f32[4, 5]"});
  expect_error([&] { (void)conv2d(x, z({2, 4, 3})); }, "conv2d", {"weight with 4 dims", "f32[2, 4, 3]"});
  expect_error(
      [&] {
        (void)conv2d(x, z({2, 3, 3, 3}));
      },
      "conv2d", {"input channels 4", "weight channels 3", "f32[1, 4, 5, 5]", "f32[2, 3, 3, 3]"});
  ConvOptions g3;
  g3.groups = 3;
  expect_error([&] { (void)conv2d(x, z({3, 1, 3, 3}), {}, g3); }, "conv2d", {"groups (3)", "input channels"});
  ConvOptions g2;
  g2.groups = 2;
  expect_error([&] { (void)conv2d(x, z({3, 2, 3, 3}), {}, g2); }, "conv2d", {"groups (2)", "output channels"});
  expect_error([&] { (void)conv2d(x, z({2, 4, 7, 3})); }, "conv2d", {"smaller than the dilated kernel", "[5, 5]"});
  ConvOptions same;
  same.same_padding = true;
  same.stride = {2};
  expect_error([&] { (void)conv1d(z({1, 4, 5}), z({2, 4, 3}), {}, same); }, "conv1d", {"same padding", "stride 1"});
  expect_error([&] { (void)conv2d(x, z({2, 4, 3, 3}), z({3})); }, "conv2d", {"bias of shape [2]", "f32[3]"});
  expect_error([&] { (void)conv2d(x, z({2, 4, 3, 3}, DType::i64)); }, "conv2d", {"one dtype", "i64[2, 4, 3, 3]"});
  expect_error(
      [&] {
        (void)conv2d(z({1, 4, 5, 5}, DType::i64), z({2, 4, 3, 3}, DType::i64));
      },
      "conv2d", {"floating-point"});
  ConvOptions bad_stride;
  bad_stride.stride = {1, 2, 3};
  expect_error([&] { (void)conv2d(x, z({2, 4, 3, 3}), {}, bad_stride); }, "conv2d", {"stride [1, 2, 3]"});
  ConvTransposeOptions outpad;
  outpad.stride = {2};
  outpad.output_padding = {2};
  expect_error(
      [&] {
        (void)conv_transpose1d(z({1, 4, 5}), z({4, 2, 3}), {}, outpad);
      },
      "conv_transpose1d", {"output_padding [2]", "stride [2]"});
  expect_error(
      [&] {
        (void)conv_transpose1d(z({1, 4, 5}), z({3, 2, 3}));
      },
      "conv_transpose1d", {"input channels 4", "f32[3, 2, 3]"});
  ConvTransposeOptions big_pad;
  big_pad.padding = {3};
  expect_error(
      [&] {
        (void)conv_transpose1d(z({1, 4, 2}), z({4, 2, 3}), {}, big_pad);
      },
      "conv_transpose1d", {"not positive"});
  for (const Device& other : devices()) {
    if (other == d) continue;
    expect_error(
        [&] {
          (void)conv2d(x, zeros(Shape{2, 4, 3, 3}, {DType::f32, other}));
        },
        "conv2d", {"one device", d.str(), other.str()});
  }
  // A failed call leaves its inputs usable.
  EXPECT_EQ(
      conv1d(ones(Shape{1, 1, 3}, {DType::f32, d}), ones(Shape{1, 1, 2}, {DType::f32, d})).to_vector<float>().get(),
      (std::vector<float>{2, 2}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Conv, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
