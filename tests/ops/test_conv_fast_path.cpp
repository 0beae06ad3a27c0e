// The CPU's conv ops (devices/cpu/conv_gemm.h) against the composites that other devices run
// (tests/ops/conv_oracle.h), and what another device says when given the CPU's ops.
#include <gtest/gtest.h>

#include "engine/submit.h"
#include "ops/conv_oracle.h"
#include "support/reference.h"

namespace kiln {
namespace {

// Normal inputs, sums of up to ~700 products in another order: agreement to rounding.
constexpr test::Tolerance kAgree{1e-4, 1e-5};

TEST(ConvFastPath, MatchesTheComposite) {
  Generator gen(11);
  for (const test::ConvShape& s : test::conv_shapes()) {
    SCOPED_TRACE(s.name);
    const std::vector<Tensor> in = test::conv_inputs(s, gen);
    const Tensor fast = test::api_conv(s, in), oracle = test::composite_conv(s, in);
    ASSERT_EQ(fast.shape(), oracle.shape());
    EXPECT_TRUE(test::values_close(test::host_values(fast), test::host_values(oracle), kAgree));
  }
}

TEST(ConvFastPath, TransposedMatchesTheComposite) {
  Generator gen(13);
  for (const test::ConvTransposeShape& s : test::conv_transpose_shapes()) {
    SCOPED_TRACE(s.name);
    const std::vector<Tensor> in = test::conv_transpose_inputs(s, gen);
    const Tensor fast = test::api_conv_transpose(s, in), oracle = test::composite_conv_transpose(s, in);
    ASSERT_EQ(fast.shape(), oracle.shape());
    EXPECT_TRUE(test::values_close(test::host_values(fast), test::host_values(oracle), kAgree));
  }
}

// Each output is one sum in a fixed order, whatever the blocks and threads: two runs agree to
// the bit, and so do a batch and its images run one by one.
TEST(ConvFastPath, ResultsAreReproducible) {
  Generator gen(12);
  const test::ConvShape s = test::conv_shapes().front();
  const std::vector<Tensor> in = test::conv_inputs(s, gen);
  const std::vector<double> once = test::host_values(test::api_conv(s, in));
  EXPECT_TRUE(test::same_bits(test::host_values(test::api_conv(s, in)), once));
  std::vector<double> by_image;
  for (std::int64_t n = 0; n < s.x[0]; ++n) {
    std::vector<Tensor> one = in;
    one[0] = slice(in[0], 0, n, n + 1);
    for (double v : test::host_values(test::api_conv(s, one))) by_image.push_back(v);
  }
  EXPECT_TRUE(test::same_bits(by_image, once));
}

// The shape rules check the ints that engine/conv.cpp and autograd's conv rule build.
TEST(ConvFastPath, OpsCheckTheirAttrs) {
  const Tensor x = zeros(Shape{1, 2, 5, 5}), w = zeros(Shape{3, 2, 3, 3}), dy = zeros(Shape{1, 3, 3, 3});
  const auto error_of = [](OpKind kind, const Tensor& a, const Tensor& b, std::vector<std::int64_t> ints) {
    OpAttrs attrs;
    attrs.ints = std::move(ints);
    try {
      (void)detail::submit2(kind, a, b, attrs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // [s, stride[s], padding[s], dilation[s], groups] (+ input size / kernel for the gradients)
  EXPECT_EQ(error_of(OpKind::conv, x, w, {2, 1, 1, 0, 0, 1, 1, 1}), "no error");
  EXPECT_NE(error_of(OpKind::conv, x, w, {2, 1, 1, 0, 0, 1, 1}).find("8 ints"), std::string::npos);
  EXPECT_NE(error_of(OpKind::conv, x, w, {2, 0, 1, 0, 0, 1, 1, 1}).find("strides"), std::string::npos);
  EXPECT_NE(error_of(OpKind::conv, x, w, {2, 1, 1, 0, 0, 1, 1, 2}).find("groups (2)"), std::string::npos);
  EXPECT_EQ(error_of(OpKind::conv_input_grad, dy, w, {2, 1, 1, 0, 0, 1, 1, 1, 5, 5}), "no error");
  EXPECT_NE(error_of(OpKind::conv_input_grad, dy, w, {2, 1, 1, 0, 0, 1, 1, 1, 6, 5}).find("windows"),
            std::string::npos);
  EXPECT_EQ(error_of(OpKind::conv_weight_grad, dy, x, {2, 1, 1, 0, 0, 1, 1, 1, 3, 3}), "no error");
  EXPECT_NE(error_of(OpKind::conv_weight_grad, dy, x, {2, 1, 1, 0, 0, 1, 1, 1, 2, 3}).find("windows"),
            std::string::npos);
}

// engine/conv.cpp submits the conv ops for CPU tensors only; another device given one reports
// it through the result's future, naming the op.
TEST(ConvFastPath, OtherDevicesRefuseTheOps) {
  int checked = 0;
  for (const Device& d : test::test_devices()) {
    if (d.kind == DeviceKind::cpu) continue;
    ++checked;
    const Tensor x = ones(Shape{1, 1, 3, 3}, {DType::f32, d}), w = ones(Shape{1, 1, 2, 2}, {DType::f32, d});
    OpAttrs attrs;
    attrs.ints = {2, 1, 1, 0, 0, 1, 1, 1};
    const Tensor y = detail::submit2(OpKind::conv, x, w, attrs);
    try {
      (void)y.to_vector<float>().get();
      ADD_FAILURE() << "conv ran on " << d.str();
    } catch (const Error& e) {
      EXPECT_EQ(e.op(), "conv") << e.what();
      EXPECT_NE(std::string(e.what()).find("no Vulkan kernel"), std::string::npos) << e.what();
    }
    EXPECT_EQ(conv2d(x, w).to_vector<float>().get(), std::vector<float>(4, 4.0f)) << "the composite still runs";
  }
  if (checked == 0) GTEST_SKIP() << "no device other than the CPU";
}

}  // namespace
}  // namespace kiln
