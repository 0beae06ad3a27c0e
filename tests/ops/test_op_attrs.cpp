// The typed op attributes (ops/attrs_*.h): each struct's encode then decode gives it back, the
// encoding is the one the kernels were written against, and a malformed OpAttrs is a kiln::Error
// naming the op.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/ops/attrs_creation.h"
#include "kiln/ops/attrs_elementwise.h"
#include "kiln/ops/attrs_index.h"
#include "kiln/ops/attrs_layout.h"
#include "kiln/ops/attrs_linalg.h"
#include "kiln/ops/attrs_window.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

using test::expect_error;

OpAttrs ints(std::vector<std::int64_t> v) {
  OpAttrs a;
  a.ints = std::move(v);
  return a;
}

WindowAttrs window_2d() {
  WindowAttrs w;
  w.dims = 2;
  w.kernel = {3, 2, 0};
  w.dilation = {1, 2, 0};
  w.padding = {1, 0, 0};
  w.stride = {2, 1, 0};
  return w;
}

TEST(OpAttrs, WindowRoundTrips) {
  WindowAttrs u = window_2d();
  u.pad_value = -1.5;
  const OpAttrs eu = u.encode(OpKind::unfold);
  EXPECT_EQ(eu.ints, (std::vector<std::int64_t>{2, 3, 2, 1, 2, 1, 0, 2, 1}));
  EXPECT_EQ(eu.scalar, -1.5);
  EXPECT_EQ(WindowAttrs::decode(OpKind::unfold, eu), u);

  WindowAttrs f = window_2d();
  f.output_size = {7, 5, 0};
  const OpAttrs ef = f.encode(OpKind::fold);
  EXPECT_EQ(ef.ints, (std::vector<std::int64_t>{2, 3, 2, 1, 2, 1, 0, 2, 1, 7, 5}));
  EXPECT_EQ(WindowAttrs::decode(OpKind::fold, ef), f);

  for (int dims = 1; dims <= 3; ++dims) {
    WindowAttrs w;
    w.dims = dims;
    for (int d = 0; d < dims; ++d) {
      w.kernel[d] = 2 + d;
      w.dilation[d] = 1 + d;
      w.padding[d] = d;
      w.stride[d] = 3 - d;
      w.output_size[d] = 10 + d;
    }
    EXPECT_EQ(WindowAttrs::decode(OpKind::fold, w.encode(OpKind::fold)), w) << dims;
  }
}

TEST(OpAttrs, MalformedWindowNamesTheOp) {
  expect_error([] { return WindowAttrs::decode(OpKind::unfold, ints({})); }, "unfold", {"1 to 3 spatial dims"});
  expect_error([] { return WindowAttrs::decode(OpKind::fold, ints({4, 1, 1, 1, 1})); }, "fold",
               {"output_size[s]", "1 to 3 spatial dims"});
  expect_error([] { return WindowAttrs::decode(OpKind::unfold, ints({1, 2, 1, 0})); }, "unfold",
               {"expected 5 ints", "got 4"});
  expect_error([] { return WindowAttrs::decode(OpKind::fold, ints({1, 2, 1, 0, 1})); }, "fold", {"expected 6 ints"});
  expect_error([] { return WindowAttrs::decode(OpKind::unfold, ints({1, 0, 1, 0, 1})); }, "unfold",
               {"kernel sizes must be positive"});
  expect_error([] { return WindowAttrs::decode(OpKind::unfold, ints({1, 2, 1, -1, 1})); }, "unfold",
               {"paddings must not be negative", "padding [-1]"});
  expect_error([] { return WindowAttrs::decode(OpKind::unfold, ints({1, 2, 1, 0, 0})); }, "unfold",
               {"strides must be positive"});
  expect_error([] { return WindowAttrs::decode(OpKind::conv, ints({1, 2, 1, 0, 1})); }, "conv", {"not an unfold"});
}

ConvAttrs conv_2d() {
  ConvAttrs a;
  a.dims = 2;
  a.stride = {2, 1, 0};
  a.padding = {1, 0, 0};
  a.dilation = {1, 2, 0};
  a.groups = 2;
  return a;
}

TEST(OpAttrs, ConvRoundTrips) {
  const ConvAttrs c = conv_2d();
  const OpAttrs e = c.encode(OpKind::conv);
  EXPECT_EQ(e.ints, (std::vector<std::int64_t>{2, 2, 1, 1, 0, 1, 2, 2}));
  EXPECT_EQ(ConvAttrs::decode(OpKind::conv, e), c);
  for (OpKind kind : {OpKind::conv_input_grad, OpKind::conv_weight_grad}) {
    ConvAttrs g = conv_2d();
    g.sizes = {5, 7, 0};
    const OpAttrs eg = g.encode(kind);
    EXPECT_EQ(eg.ints, (std::vector<std::int64_t>{2, 2, 1, 1, 0, 1, 2, 2, 5, 7}));
    EXPECT_EQ(ConvAttrs::decode(kind, eg), g);
  }
  // The window unfold and fold see: the conv's, with the kernel given.
  const std::int64_t kernel[] = {3, 2};
  const WindowAttrs w = c.window(kernel);
  EXPECT_EQ(w.encode(OpKind::unfold).ints, (std::vector<std::int64_t>{2, 3, 2, 1, 2, 1, 0, 2, 1}));
}

TEST(OpAttrs, MalformedConvNamesTheOp) {
  expect_error([] { return ConvAttrs::decode(OpKind::conv, ints({0})); }, "conv", {"1 to 3 spatial dims"});
  expect_error([] { return ConvAttrs::decode(OpKind::conv, ints({2, 1, 1, 0, 0, 1, 1})); }, "conv",
               {"(8 ints), got 7 ints"});
  expect_error([] { return ConvAttrs::decode(OpKind::conv_input_grad, ints({2, 1, 1, 0, 0, 1, 1, 1})); },
               "conv_input_grad", {"input_size[s]", "(10 ints)"});
  expect_error([] { return ConvAttrs::decode(OpKind::conv_weight_grad, ints({1, 1, 0, 1, 1})); }, "conv_weight_grad",
               {"kernel[s]", "(6 ints)"});
  expect_error([] { return ConvAttrs::decode(OpKind::conv, ints({1, 0, 0, 1, 1})); }, "conv", {"strides"});
  expect_error([] { return ConvAttrs::decode(OpKind::conv, ints({1, 1, -1, 1, 1})); }, "conv", {"paddings"});
  expect_error([] { return ConvAttrs::decode(OpKind::conv, ints({1, 1, 0, 1, 0})); }, "conv", {"groups"});
  expect_error([] { return ConvAttrs::decode(OpKind::conv_weight_grad, ints({1, 1, 0, 1, 1, 0})); },
               "conv_weight_grad", {"sizes must be positive"});
}

PoolAttrs pool_2d() {
  PoolAttrs a;
  a.dims = 2;
  a.kernel = {3, 2, 0};
  a.stride = {2, 1, 0};
  a.padding = {1, 0, 0};
  a.dilation = {2, 1, 0};
  a.ceil_mode = true;
  a.count_include_pad = false;
  a.with_indices = true;
  return a;
}

TEST(OpAttrs, PoolRoundTrips) {
  const PoolAttrs p = pool_2d();
  const OpAttrs e = p.encode(OpKind::max_pool);
  EXPECT_EQ(e.ints, (std::vector<std::int64_t>{2, 3, 2, 2, 1, 1, 0, 2, 1, 1, 0, 1}));
  EXPECT_EQ(PoolAttrs::decode(OpKind::max_pool, e), p);
  PoolAttrs g = pool_2d();
  g.input_size = {9, 8, 0};
  const OpAttrs eg = g.encode(OpKind::max_pool_grad);
  EXPECT_EQ(eg.ints, (std::vector<std::int64_t>{2, 3, 2, 2, 1, 1, 0, 2, 1, 1, 0, 1, 9, 8}));
  EXPECT_EQ(PoolAttrs::decode(OpKind::max_pool_grad, eg), g);
  PoolAttrs avg = pool_2d();
  avg.dilation = {1, 1, 0};
  avg.input_size = {4, 5, 0};
  EXPECT_EQ(PoolAttrs::decode(OpKind::avg_pool_grad, avg.encode(OpKind::avg_pool_grad)), avg);
  // torch's pooling_output_shape: 9 + 2 - 5 = 6, ceil(6 / 2) + 1 = 4; 8 - 2 + 1 = 7.
  EXPECT_EQ(p.output_size(0, 9), 4);
  EXPECT_EQ(p.output_size(1, 8), 7);
  // ceil_mode's extra window would start in the right padding: dropped (5 + 2 - 2 = 5, ceil(5 / 2) + 1 = 4 -> 3).
  PoolAttrs k2 = pool_2d();
  k2.kernel = {2, 2, 0};
  k2.dilation = {1, 1, 0};
  EXPECT_EQ(k2.output_size(0, 5), 3);
  PoolAttrs k5 = k2;
  k5.kernel = {5, 5, 0};
  k5.ceil_mode = false;
  EXPECT_EQ(k5.output_size(0, 2), 0);  // no window fits: the shape rule says too small
}

TEST(OpAttrs, MalformedPoolNamesTheOp) {
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::max_pool, ints({3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
      },
      "max_pool", {"1 or 2 spatial dims"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::avg_pool, ints({1, 2, 2, 0, 1, 0, 1}));
      },
      "avg_pool", {"got 7 ints"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::max_pool_grad, ints({1, 2, 2, 0, 1, 0, 1, 1}));
      },
      "max_pool_grad", {"input_size[s]"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::max_pool, ints({1, 0, 2, 0, 1, 0, 1, 1}));
      },
      "max_pool", {"kernels, strides and dilations must be positive"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::max_pool, ints({1, 3, 2, 2, 1, 0, 1, 1}));
      },
      "max_pool", {"padding [2]", "half the kernel [3]"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::max_pool, ints({1, 3, 2, 1, 1, 2, 1, 1}));
      },
      "max_pool", {"must be 0 or 1"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::avg_pool, ints({1, 3, 2, 1, 2, 0, 1, 0}));
      },
      "avg_pool", {"no dilation"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::avg_pool_grad, ints({1, 3, 2, 1, 1, 0, 1, 0, 0}));
      },
      "avg_pool_grad", {"input sizes must be positive"});
  expect_error(
      [] {
        return PoolAttrs::decode(OpKind::conv, ints({1, 3, 2, 1, 1, 0, 1, 0}));
      },
      "conv", {"not a pooling op"});
}

TEST(OpAttrs, MatmulRoundTrips) {
  // No flags: no ints, as a plain matmul's message always was.
  EXPECT_TRUE(MatmulAttrs{}.encode().ints.empty());
  EXPECT_EQ(MatmulAttrs::decode(OpKind::matmul, OpAttrs{}), MatmulAttrs{});
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const MatmulAttrs m{.transpose_a = ta, .transpose_b = tb};
      EXPECT_EQ(MatmulAttrs::decode(OpKind::matmul, m.encode()), m);
    }
  EXPECT_EQ(MatmulAttrs{.transpose_b = true}.encode().ints, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(MatmulAttrs::decode(OpKind::matmul, ints({0, 0})), MatmulAttrs{});
  expect_error([] { return MatmulAttrs::decode(OpKind::matmul, ints({1})); }, "matmul", {"transpose_a"});
  expect_error([] { return MatmulAttrs::decode(OpKind::matmul, ints({0, 2})); }, "matmul", {"0 or 1"});
}

TEST(OpAttrs, ClampRoundTrips) {
  const ClampAttrs both{.has_min = true, .has_max = true, .min = -1.5, .max = 2.0};
  const OpAttrs e = both.encode();
  EXPECT_EQ(e.ints, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(e.scalar, -1.5);
  EXPECT_EQ(e.scalar2, 2.0);
  EXPECT_EQ(ClampAttrs::decode(OpKind::clamp, e), both);
  const ClampAttrs upper{.has_max = true, .max = 3.0};
  EXPECT_EQ(upper.encode().ints, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(ClampAttrs::decode(OpKind::clamp, upper.encode()), upper);
  expect_error([] { return ClampAttrs::decode(OpKind::clamp, ints({1})); }, "clamp", {"[has_min, has_max]"});
  expect_error([] { return ClampAttrs::decode(OpKind::clamp, ints({1, 5})); }, "clamp", {"0 or 1"});
}

TEST(OpAttrs, TopkRoundTrips) {
  const TopkAttrs t{.k = 3, .dim = -1, .largest = false};
  const OpAttrs e = t.encode();
  EXPECT_EQ(e.ints, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(e.dim, -1);
  EXPECT_FALSE(e.flag);
  EXPECT_EQ(TopkAttrs::decode(OpKind::topk, e), t);
  expect_error([] { return TopkAttrs::decode(OpKind::topk, ints({})); }, "topk", {"k in ints[0]"});
  expect_error([] { return TopkAttrs::decode(OpKind::topk, ints({1, 2})); }, "topk", {"k in ints[0]"});
}

TEST(OpAttrs, SliceRoundTrips) {
  SliceAttrs s;
  s.rank = 3;
  s.dims[0] = {0, 4, 1};
  s.dims[1] = {1, 7, 3};
  s.dims[2] = {2, 2, 1};
  const OpAttrs e = s.encode();
  EXPECT_EQ(e.ints, (std::vector<std::int64_t>{0, 4, 1, 1, 7, 3, 2, 2, 1}));
  EXPECT_EQ(SliceAttrs::decode(OpKind::slice, e), s);
  EXPECT_EQ(SliceAttrs::decode(OpKind::slice, OpAttrs{}).rank, 0);  // a 0-d input
  expect_error([] { return SliceAttrs::decode(OpKind::slice, ints({0, 4})); }, "slice",
               {"(start, stop, step) triple", "[0, 4]"});
  expect_error([] { return SliceAttrs::decode(OpKind::slice, OpAttrs{.ints = std::vector<std::int64_t>(27, 1)}); },
               "slice", {"at most 8"});
}

TEST(OpAttrs, PadRoundTrips) {
  const PadAttrs p = PadAttrs::from_pairs({1, 2, -1, 0}, 0.5);
  EXPECT_EQ(p.count, 2);
  // Pairs run from the last dim: of a rank-3 tensor, dim 2 gets (1, 2), dim 1 (-1, 0), dim 0 none.
  EXPECT_EQ(p.before_dim(2, 3), 1);
  EXPECT_EQ(p.after_dim(2, 3), 2);
  EXPECT_EQ(p.before_dim(1, 3), -1);
  EXPECT_EQ(p.after_dim(0, 3), 0);
  const OpAttrs e = p.encode();
  EXPECT_EQ(e.ints, (std::vector<std::int64_t>{1, 2, -1, 0}));
  EXPECT_EQ(e.scalar, 0.5);
  EXPECT_EQ(PadAttrs::decode(OpKind::pad, e), p);
  EXPECT_EQ(p.pairs(), e.ints);
  expect_error([] { return PadAttrs::decode(OpKind::pad, ints({1, 2, 3})); }, "pad", {"(before, after) pairs"});
  expect_error([] { return PadAttrs::from_pairs(std::vector<std::int64_t>(18, 0), 0.0); }, "pad", {"more than 8"});
}

TEST(OpAttrs, CreationRoundTrips) {
  const CreationOutput out{Shape{2, 3}, DType::i64};
  const FullAttrs full{out, 7.0};
  const OpAttrs e = full.encode();
  EXPECT_EQ(e.ints, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(e.dtype, DType::i64);
  EXPECT_EQ(e.scalar, 7.0);
  EXPECT_EQ(FullAttrs::decode(OpKind::full, e), full);
  EXPECT_EQ(CreationOutput::decode(OpKind::eye, out.encode()), out);
  const ArangeAttrs arange{CreationOutput{Shape{5}}, 1.0, 0.5};
  EXPECT_EQ(ArangeAttrs::decode(OpKind::arange, arange.encode()), arange);
  EXPECT_EQ(arange.encode().scalar2, 0.5);
  const LinspaceAttrs linspace{CreationOutput{Shape{4}}, -1.0, 1.0};
  EXPECT_EQ(LinspaceAttrs::decode(OpKind::linspace, linspace.encode()), linspace);
  const UniformAttrs uniform{out, -2.0, 3.0, 42};
  EXPECT_EQ(uniform.encode().seed, 42u);
  EXPECT_EQ(UniformAttrs::decode(OpKind::rand_uniform, uniform.encode()), uniform);
  const NormalAttrs normal{out, 1.0, 0.25, 9};
  EXPECT_EQ(NormalAttrs::decode(OpKind::rand_normal, normal.encode()), normal);
  const BernoulliAttrs bernoulli{out, 0.3, 11};
  EXPECT_EQ(BernoulliAttrs::decode(OpKind::rand_bernoulli, bernoulli.encode()), bernoulli);

  expect_error([] { return CreationOutput::decode(OpKind::full, ints({2, -1})); }, "full", {"negative dimension -1"});
  expect_error([] { return CreationOutput::decode(OpKind::eye, ints(std::vector<std::int64_t>(9, 1))); }, "eye",
               {"more than 8"});
  expect_error([] { return ArangeAttrs::decode(OpKind::linspace, ints({3})); }, "linspace", {"arange"});
}

}  // namespace
}  // namespace kiln
