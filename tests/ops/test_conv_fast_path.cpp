// The CPU's conv ops (devices/cpu/conv_gemm.h) against the composites (tests/ops/conv_oracle.h),
// and the conv ops on every test device (Vulkan's against the oracle: tests/devices/vulkan).
#include <gtest/gtest.h>

#include "kiln/engine/submit.h"
#include "ops/conv_oracle.h"
#include "support/reference.h"
#include "support/weight_packing.h"

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

// The convolution of each image of the batch on its own, the values end to end.
std::vector<double> image_by_image(const test::ConvShape& s, const std::vector<Tensor>& in) {
  std::vector<double> values;
  for (std::int64_t n = 0; n < s.x[0]; ++n) {
    std::vector<Tensor> one = in;
    one[0] = slice(in[0], 0, n, n + 1);
    for (double v : test::host_values(test::api_conv(s, one))) values.push_back(v);
  }
  return values;
}

// Each output is one sum in a fixed order, whatever the blocks and threads: two runs agree to
// the bit, and so do a batch and its images run one by one.
TEST(ConvFastPath, ResultsAreReproducible) {
  Generator gen(12);
  const test::ConvShape s = test::conv_shapes().front();
  const std::vector<Tensor> in = test::conv_inputs(s, gen);
  const std::vector<double> once = test::host_values(test::api_conv(s, in));
  EXPECT_TRUE(test::same_bits(test::host_values(test::api_conv(s, in)), once));
  EXPECT_TRUE(test::same_bits(image_by_image(s, in), once));
}

// A convolution with a small output plane is one product with the weights packed in panels,
// packed as it goes on its first two calls and kept packed from the second on (a served model's
// weights; with KILN_PACK_WEIGHTS=0 never kept): every call gives the same bits, the kept
// weights were packed once, and a batch gives its images' bits run one by one.
TEST(ConvFastPath, ASmallPlaneGivesTheSameBitsBeforeAndAfterItsWeightIsPacked) {
  Generator gen(14);
  test::ConvShape s;
  for (const test::ConvShape& shape : test::conv_shapes())
    if (shape.name == "product_7x7_plane_k_in_stretches") s = shape;
  ASSERT_FALSE(s.name.empty());
  const std::vector<Tensor> in = test::conv_inputs(s, gen);
  const std::uint64_t packed_before = counters(Device::cpu()).weights_packed;
  const std::vector<double> first = test::host_values(test::api_conv(s, in));
  for (int call = 2; call <= 4; ++call) {
    SCOPED_TRACE(call);
    EXPECT_TRUE(test::same_bits(test::host_values(test::api_conv(s, in)), first));
  }
  EXPECT_EQ(counters(Device::cpu()).weights_packed - packed_before, test::weight_packing_on() ? 1u : 0u);
  EXPECT_TRUE(test::values_close(first, test::host_values(test::composite_conv(s, in)), kAgree));
  EXPECT_TRUE(test::same_bits(image_by_image(s, in), first));
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

// engine/conv.cpp and autograd's conv rule submit the conv ops on the CPU and on Vulkan: every
// test device has their kernels. Ones through a 2x2 kernel of ones over a 3x3 image: each
// output counts its window's elements, each input gradient the windows covering it.
TEST(ConvFastPath, EveryDeviceRunsTheOps) {
  for (const Device& d : test::test_devices()) {
    SCOPED_TRACE(d.str());
    const TensorOptions on{DType::f32, d};
    const Tensor x = ones(Shape{1, 1, 3, 3}, on), w = ones(Shape{1, 1, 2, 2}, on), dy = ones(Shape{1, 1, 2, 2}, on);
    const std::vector<std::int64_t> ints = {2, 1, 1, 0, 0, 1, 1, 1};
    const auto attrs = [&](std::vector<std::int64_t> extra) {
      OpAttrs a;
      a.ints = ints;
      a.ints.insert(a.ints.end(), extra.begin(), extra.end());
      return a;
    };
    EXPECT_EQ(detail::submit2(OpKind::conv, x, w, attrs({})).to_vector<float>().get(), std::vector<float>(4, 4.0f));
    EXPECT_EQ(detail::submit2(OpKind::conv_input_grad, dy, w, attrs({3, 3})).to_vector<float>().get(),
              (std::vector<float>{1, 2, 1, 2, 4, 2, 1, 2, 1}));
    EXPECT_EQ(detail::submit2(OpKind::conv_weight_grad, dy, x, attrs({2, 2})).to_vector<float>().get(),
              std::vector<float>(4, 4.0f));
  }
}

}  // namespace
}  // namespace kiln
