// RecordedPass: a forward pass recorded once and replayed as one message. Its answers are checked
// against the model computed here in double precision (small integers over powers of two: exact
// in f32), from one thread and from many at once; a replay is one message; what a pass may not
// do is an error from record(); a failure inside a replay reaches its read and leaves nothing
// behind for the next.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"
#include "support/exact_inputs.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

constexpr std::int64_t kIn = 6, kHidden = 5, kOut = 3;

float w1_at(std::int64_t i, std::int64_t j) { return static_cast<float>((i * 3 + j * 5) % 7 - 3) / 4.0f; }
float w2_at(std::int64_t i, std::int64_t j) { return static_cast<float>((i * 2 + j) % 5 - 2) / 8.0f; }

// y = relu(x W1 + b1) W2 + b2, the served MLP's shape in small.
struct TwoLayers {
  Tensor w1, b1, w2, b2;
  TwoLayers() {
    std::vector<float> a, b, c, d;
    for (std::int64_t i = 0; i < kIn; ++i)
      for (std::int64_t j = 0; j < kHidden; ++j) a.push_back(w1_at(i, j));
    for (std::int64_t j = 0; j < kHidden; ++j) b.push_back(static_cast<float>(j - 2) / 2.0f);
    for (std::int64_t i = 0; i < kHidden; ++i)
      for (std::int64_t j = 0; j < kOut; ++j) c.push_back(w2_at(i, j));
    for (std::int64_t j = 0; j < kOut; ++j) d.push_back(static_cast<float>(j) / 4.0f);
    w1 = from_vector(a, {kIn, kHidden});
    b1 = from_vector(b, {kHidden});
    w2 = from_vector(c, {kHidden, kOut});
    b2 = from_vector(d, {kOut});
  }
  Tensor operator()(const Tensor& x) const { return add(matmul(relu(add(matmul(x, w1), b1)), w2), b2); }
};

std::vector<float> input_for(int id) { return test::exact_input(id, kIn); }

std::vector<float> expected_for(int id) {
  const std::vector<float> x = input_for(id);
  std::vector<double> h(kHidden);
  for (std::int64_t j = 0; j < kHidden; ++j) {
    double acc = static_cast<double>(j - 2) / 2.0;
    for (std::int64_t i = 0; i < kIn; ++i) acc += double(x[i]) * w1_at(i, j);
    h[j] = std::max(acc, 0.0);
  }
  std::vector<float> y(kOut);
  for (std::int64_t j = 0; j < kOut; ++j) {
    double acc = static_cast<double>(j) / 4.0;
    for (std::int64_t i = 0; i < kHidden; ++i) acc += h[i] * w2_at(i, j);
    y[j] = static_cast<float>(acc);
  }
  return y;
}

std::vector<float> replay(const RecordedPass& pass, int id) {
  return pass(from_vector(input_for(id), {1, kIn})).to_vector<float>().get();
}

TEST(RecordedPass, ReplaysAnswerWithTheModelsValues) {
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  EXPECT_EQ(pass.input_shape(), (Shape{1, kIn}));
  EXPECT_EQ(pass.output_shape(), (Shape{1, kOut}));
  EXPECT_EQ(pass.size(), 5u);  // two products, two adds, a relu; each value in between consumed
  const std::uint64_t before = counters().passes_replayed;
  for (int id = 0; id < 20; ++id) EXPECT_EQ(replay(pass, id), expected_for(id)) << id;
  EXPECT_EQ(counters().passes_replayed - before, 20u);
}

TEST(RecordedPass, AReplayIsOneMessage) {
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  const Tensor x = from_vector(input_for(3), {1, kIn});
  const std::uint64_t before = counters().ops_submitted;
  const Tensor y = pass(x);
  EXPECT_EQ(counters().ops_submitted - before, 1u);
  EXPECT_EQ(y.to_vector<float>().get(), expected_for(3));
  // The input is read, never taken over: it keeps its values for the caller.
  EXPECT_EQ(x.to_vector<float>().get(), input_for(3));
}

TEST(RecordedPass, ReplaysFromManyThreadsEachGetTheirOwnAnswer) {
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 25; ++k) {
        const int id = t * 100 + k;
        if (replay(pass, id) != expected_for(id)) wrong.fetch_add(1);
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(RecordedPass, ReplaysOfTwoPassesInOneBatchKeepTheirOwnEntities) {
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  const RecordedPass doubled = RecordedPass::record([&](const Tensor& x) { return mul(model(x), 2.0); }, {1, kIn});
  // Submitted before anything is read: the replays share a batch, one after the other.
  const Tensor a = pass(from_vector(input_for(1), {1, kIn}));
  const Tensor b = doubled(from_vector(input_for(2), {1, kIn}));
  const Tensor c = pass(from_vector(input_for(4), {1, kIn}));
  EXPECT_EQ(a.to_vector<float>().get(), expected_for(1));
  std::vector<float> twice = expected_for(2);
  for (float& v : twice) v *= 2.0f;
  EXPECT_EQ(b.to_vector<float>().get(), twice);
  EXPECT_EQ(c.to_vector<float>().get(), expected_for(4));
}

TEST(RecordedPass, ReplaysOfTwoThreadsInOneBatchRunInOrder) {
  // Each thread submits a replay and an op on its result without reading: the batch holds two
  // threads' kernels, which the CPU runs as tasks side by side, but a pass's steps in order.
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  const std::uint64_t overlapped = counters().overlapped_kernels;
  Tensor a, b;
  std::thread([&] { a = add(pass(from_vector(input_for(1), {1, kIn})), 1.0); }).join();
  std::thread([&] { b = add(pass(from_vector(input_for(2), {1, kIn})), 1.0); }).join();
  std::vector<float> ea = expected_for(1), eb = expected_for(2);
  for (float& v : ea) v += 1.0f;
  for (float& v : eb) v += 1.0f;
  EXPECT_EQ(a.to_vector<float>().get(), ea);
  EXPECT_EQ(b.to_vector<float>().get(), eb);
  // The adds ran as tasks (with fusion off, every message runs as it comes: no shared batch).
  if (fusion_enabled()) {
    EXPECT_GT(counters().overlapped_kernels, overlapped);
  }
}

TEST(RecordedPass, AResultUsedAfterTheBatchsTasksWereCollectedIsWhole) {
  // In a batch of two threads' kernels (run as tasks), a replay's result read by an op after an
  // upload, which first collects every task: the pass's steps ran in order, so no task of the
  // pass is left for the result to name once the tasks are gone.
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  const Tensor other = from_vector(input_for(9), {1, kIn});
  Device::cpu().sync().get();
  Tensor y, z, w;
  std::thread([&] { y = pass(from_vector(input_for(1), {1, kIn})); }).join();
  std::thread([&] { z = add(other, 1.0); }).join();
  const Tensor later = from_vector(input_for(3), {1, kIn});
  std::thread([&] { w = add(y, 1.0); }).join();
  std::vector<float> expected = expected_for(1);
  for (float& v : expected) v += 1.0f;
  EXPECT_EQ(w.to_vector<float>().get(), expected);
  EXPECT_EQ(y.to_vector<float>().get(), expected_for(1));
  EXPECT_EQ(later.to_vector<float>().get(), input_for(3));
}

TEST(RecordedPass, ConstantsAndRandomValuesMadeInsideAreMadeAgainAtEachReplay) {
  // A constant uploaded inside the pass: each replay uploads it again from the same bytes.
  const RecordedPass shifted = RecordedPass::record(
      [](const Tensor& x) {
        return add(x, from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {1, kIn}));
      },
      {1, kIn});
  for (int id = 0; id < 3; ++id) {
    std::vector<float> expected = input_for(id);
    for (std::int64_t i = 0; i < kIn; ++i) expected[i] += static_cast<float>(i + 1);
    EXPECT_EQ(shifted(from_vector(input_for(id), {1, kIn})).to_vector<float>().get(), expected) << id;
  }
  // Random values: the seed drawn while recording, so every replay draws the same ones.
  Generator gen(11);
  const RecordedPass noisy = RecordedPass::record(
      [&](const Tensor& x) {
        return add(x, rand({1, kIn}, gen));
      },
      {1, kIn});
  const std::vector<float> first = noisy(zeros({1, kIn})).to_vector<float>().get();
  EXPECT_EQ(noisy(zeros({1, kIn})).to_vector<float>().get(), first);
  for (float v : first) EXPECT_TRUE(v >= 0.0f && v < 1.0f) << v;
}

TEST(RecordedPass, AnInputOfAnotherShapeIsAnErrorAtTheCallSite) {
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  test::expect_error([&] { (void)pass(zeros({2, kIn})); }, "recorded pass", {"f32[1, 6]", "f32[2, 6]"});
  test::expect_error([&] { (void)pass(zeros({1, kIn}, TensorOptions{DType::i64})); }, "recorded pass", {"i64[1, 6]"});
}

TEST(RecordedPass, WhatAPassMayNotDoIsAnErrorFromRecord) {
  const TwoLayers model;
  // Reading a value: nothing runs while a pass is recorded.
  test::expect_error(
      [&] {
        (void)RecordedPass::record(
            [&](const Tensor& x) {
              Tensor y = model(x);
              (void)y.to_vector<float>();
              return y;
            },
            {1, kIn});
      },
      "to_vector", {"cannot read values"});
  // Keeping a tensor it made beyond the call.
  Tensor kept;
  test::expect_error(
      [&] {
        (void)RecordedPass::record(
            [&](const Tensor& x) {
              kept = relu(x);
              return model(x);
            },
            {1, kIn});
      },
      "RecordedPass::record", {"keeps a tensor it made", "f32[1, 6]"});
  kept = Tensor();
  // Returning its input: nothing to record.
  test::expect_error(
      [&] {
        (void)RecordedPass::record([](const Tensor& x) { return x; }, {1, kIn});
      },
      "RecordedPass::record", {"did not make"});
  // Gradients: a weight that requires them, outside NoGradGuard.
  const Tensor w = require_grad(model.w1);
  test::expect_error(
      [&] {
        (void)RecordedPass::record([&](const Tensor& x) { return matmul(x, w); }, {1, kIn});
      },
      "matmul", {"takes no gradients", "NoGradGuard"});
  {
    const NoGradGuard no_grad;
    const RecordedPass pass = RecordedPass::record([&](const Tensor& x) { return matmul(x, w); }, {1, kIn});
    EXPECT_EQ(pass(from_vector(input_for(0), {1, kIn})).shape(), (Shape{1, kHidden}));
  }
  // The engine goes on recording and replaying after each of these.
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  EXPECT_EQ(replay(pass, 5), expected_for(5));
}

TEST(RecordedPass, AFailureInsideAReplayReachesItsReadAndTheNextReplayIsWhole) {
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  EXPECT_EQ(replay(pass, 1), expected_for(1));
  const Tensor x = from_vector(input_for(2), {1, kIn});
  Tensor failed;
  {
    // No memory for the pass's intermediate values.
    Device::cpu().sync().get();
    release_cached_memory();
    set_memory_limit(Device::cpu(), memory_stats().bytes_reserved + 8);
    failed = pass(x);
    Device::cpu().sync().get();
    set_memory_limit(Device::cpu(), 0);
  }
  try {
    (void)failed.to_vector<float>().get();
    FAIL() << "expected the read to fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  for (int id = 3; id < 6; ++id) EXPECT_EQ(replay(pass, id), expected_for(id)) << id;
}

TEST(RecordedPass, AFailedInputFailsTheReplay) {
  const TwoLayers model;
  const RecordedPass pass = RecordedPass::record(model, {1, kIn});
  Tensor bad;
  {
    Device::cpu().sync().get();
    release_cached_memory();
    set_memory_limit(Device::cpu(), memory_stats().bytes_reserved + 16);
    bad = full({1, kIn}, 1.0);  // 24 bytes past a 16-byte cap
    Device::cpu().sync().get();
    set_memory_limit(Device::cpu(), 0);
  }
  try {
    (void)pass(bad).to_vector<float>().get();
    FAIL() << "expected the read to fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "full");  // the op that failed first
  }
  EXPECT_EQ(replay(pass, 7), expected_for(7));
}

}  // namespace
}  // namespace kiln
