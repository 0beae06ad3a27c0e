// RecordedFunction: a recording of several inputs and outputs. Inputs handed over lend their
// buffers (the recording's in-place ops write them), inputs kept are only read; host inputs
// bring each call's numbers in its message; gradients are recorded like any op; outputs may be
// inputs or named twice; what a recording may not do is an error from record().
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

// w - g * lr, with w handed over by the function to the op that reads it last.
RecordedFunction sgd_update() {
  return RecordedFunction::record(
      [](std::vector<Tensor>& in, RecordedFunction::Recording& rec) {
        Tensor lr = rec.host_input({});
        Tensor w = std::move(in[0]);
        return std::vector<Tensor>{sub(std::move(w), mul(in[1], lr))};
      },
      {{{4}}, {{4}}});
}

TEST(RecordedFunction, HostInputsBringEachCallsNumbers) {
  const RecordedFunction f = sgd_update();
  EXPECT_EQ(f.host_bytes(), sizeof(float));
  const Tensor g = from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  for (double lr : {0.5, 0.25, 2.0}) {
    const Tensor w = from_vector(std::vector<float>{10, 10, 10, 10}, {4});
    const std::vector<float> want{static_cast<float>(10 - lr), static_cast<float>(10 - 2 * lr),
                                  static_cast<float>(10 - 3 * lr), static_cast<float>(10 - 4 * lr)};
    EXPECT_EQ(f({w, g}, RecordedFunction::f32_values({lr}))[0].to_vector<float>().get(), want) << lr;
    // Kept by the caller: read, never written.
    EXPECT_EQ(w.to_vector<float>().get(), std::vector<float>(4, 10.0f));
  }
}

TEST(RecordedFunction, AnInputHandedOverIsWrittenInPlace) {
  const RecordedFunction f = sgd_update();
  const Tensor g = from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  Tensor w = from_vector(std::vector<float>{10, 10, 10, 10}, {4});
  Device::cpu().sync().get();
  const std::uint64_t reuses = counters().inplace_reuses;
  const std::uint64_t submitted = counters().ops_submitted;
  for (int i = 0; i < 4; ++i) {
    // Not a braced list: its elements are copied into the vector, which would hold w twice.
    std::vector<Tensor> in;
    in.push_back(std::move(w));
    in.push_back(g);
    w = f(std::move(in), RecordedFunction::f32_values({1.0}))[0];
  }
  EXPECT_EQ(counters().ops_submitted - submitted, 4u);
  EXPECT_EQ(w.to_vector<float>().get(), (std::vector<float>{6, 2, -2, -6}));
  EXPECT_EQ(counters().inplace_reuses - reuses, 4u);
}

TEST(RecordedFunction, GradientsAreRecordedAndOutputsMayBeInputsOrTwice) {
  // d/dw sum((x w)^2) = 2 x^T (x w), and the input x handed back, and the product twice.
  const RecordedFunction f = RecordedFunction::record(
      [](std::vector<Tensor>& in, RecordedFunction::Recording&) {
        const Tensor w = require_grad(in[1]);
        Tensor y = matmul(in[0], w);
        const Gradients g = backward(sum(mul(y, y)));
        Tensor dy = detach(y);
        return std::vector<Tensor>{g.get(w), in[0], dy, dy};
      },
      {{{1, 2}}, {{2, 1}}});
  EXPECT_EQ(f.outputs().size(), 4u);
  const Tensor x = from_vector(std::vector<float>{1, 2}, {1, 2});
  const Tensor w = from_vector(std::vector<float>{3, 4}, {2, 1});
  const std::vector<Tensor> out = f({x, w});
  EXPECT_EQ(out[0].to_vector<float>().get(), (std::vector<float>{22, 44}));  // y = 11
  EXPECT_EQ(out[1].to_vector<float>().get(), (std::vector<float>{1, 2}));
  EXPECT_EQ(out[2].to_vector<float>().get(), std::vector<float>{11});
  EXPECT_EQ(out[3].to_vector<float>().get(), std::vector<float>{11});
}

TEST(RecordedFunction, WhatARecordingMayNotDoIsAnErrorFromRecord) {
  const Tensor outside = ones({4});
  // Returning a tensor from outside.
  test::expect_error(
      [&] {
        return RecordedFunction::record([&](std::vector<Tensor>&, RecordedFunction::Recording&) {
          return std::vector<Tensor>{outside};
        }, {{{4}}});
      },
      "RecordedFunction::record", {"output #0", "f32[4]", "from outside"});
  // Keeping an input beyond the call.
  Tensor kept;
  test::expect_error(
      [&] {
        return RecordedFunction::record([&](std::vector<Tensor>& in, RecordedFunction::Recording&) {
          kept = in[0];
          return std::vector<Tensor>{add(in[0], 1.0)};
        }, {{{4}}});
      },
      "RecordedFunction::record", {"keeps its input #0", "f32[4]"});
  kept = Tensor();
  // A call of other shapes, or without its host values.
  const RecordedFunction f = sgd_update();
  test::expect_error([&] { return f({ones({3}), ones({4})}, RecordedFunction::f32_values({1})); }, "recorded function",
                     {"input #0", "f32[4]", "f32[3]"});
  test::expect_error([&] { return f({ones({4}), ones({4})}); }, "recorded function", {"4 bytes of host inputs"});
}

}  // namespace
}  // namespace kiln
