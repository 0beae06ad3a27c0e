// Resuming with another number of processes: a checkpoint written mid-epoch by N processes (batches
// of 8 each, 8 N samples a step) resumes on M processes (still 8 each) at the same sample of the
// epoch — not the same batch index, which would skip or repeat samples. The reference is one
// process stepping over the same rows in the same groups: the steps of 8 N, then those of 8 M.
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <fstream>

#include "kiln/train/learner.h"
#include "kiln/train/learner_state.h"
#include "training.h"
#include "world.h"

namespace kiln {
namespace {

constexpr std::int64_t kResumeRows = 96, kResumeBatch = 8;

std::vector<float> resume_row(std::int64_t i) {
  std::vector<float> x;
  for (int j = 0; j < 6; ++j) x.push_back(static_cast<float>(std::cos(0.9 * static_cast<double>(i * 7 + j))));
  return x;
}

data::DatasetPtr<data::Example> resume_rows() {
  std::vector<data::Example> items;
  for (std::int64_t i = 0; i < kResumeRows; ++i) items.push_back({resume_row(i), Shape{6}, i % 3, {}});
  return data::in_memory(std::move(items));
}

// One epoch (resumed from the shared folder's checkpoint); rank 0 gets a Ctrl-C in this run's
// batch KILN_TEST_STOP_AT when that is set.
TEST(DistWorker, DISABLED_LearnerResumedByAnotherWorld) {
  dist::ProcessGroup group = dist::ProcessGroup::from_env();
  const int r = group.rank(), n = group.world_size();
  const std::filesystem::path shared = std::getenv("KILN_TEST_SHARED");
  const char* stop = std::getenv("KILN_TEST_STOP_AT");
  auto shard = dist::shard(resume_rows(), r, n, {.shuffle = false});
  auto ddp = std::make_shared<dist::DataParallel>(group);
  ddp->follow_epochs(shard);
  const data::DataLoader<> loader(shard, {.batch_size = kResumeBatch});
  int calls = 0;
  train::Learner<test::DistMlp> learner(
      test::DistMlp{}, std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 1e-2}),
      [&](const test::DistMlp& m, const data::Batch& b) {
        if (stop && r == 0 && ++calls == std::atoi(stop)) raise(SIGINT);
        Tensor logits = m(b.inputs);
        return train::StepOutput{nn::cross_entropy(logits, b.labels), logits, b.labels, b.size()};
      },
      {.epochs = 1,
       .checkpoint_dir = shared / "checkpoints",
       .dashboard = train::DashboardMode::off,
       .distributed = ddp});
  const train::FitResult result = learner.fit(loader);
  const std::vector<std::string> all = group.all_gather(test::as_bytes(test::flat_parameters(learner.model())));
  for (int q = 1; q < n; ++q) EXPECT_EQ(all[static_cast<std::size_t>(q)], all[0]) << "rank " << q;
  if (r == 0) std::ofstream(test::report_path(r).parent_path() / "params.bin", std::ios::binary) << all[0];
  test::write_report(r, ::testing::Test::HasFailure() ? "failed"
                        : result.interrupted ? "interrupted at batch " + std::to_string(result.stopped_at.batch)
                                             : "done");
}

// One process stepping over the rows in order, in steps of the given sizes.
std::vector<float> resume_reference(const std::vector<std::int64_t>& steps) {
  test::DistMlp model;
  optim::Adam adam({.lr = 1e-2});
  std::int64_t first = 0;
  for (const std::int64_t count : steps) {
    std::vector<float> x;
    std::vector<std::int64_t> y;
    for (std::int64_t i = first; i < first + count; ++i) {
      const std::vector<float> v = resume_row(i);
      x.insert(x.end(), v.begin(), v.end());
      y.push_back(i % 3);
    }
    const Tensor loss =
        nn::cross_entropy(model(from_vector(std::move(x), Shape{count, 6})), from_vector(std::move(y), Shape{count}));
    model = adam.step(std::move(model), backward(loss));
    first += count;
  }
  EXPECT_EQ(first, kResumeRows);
  return test::flat_parameters(model);
}

// One run of `world` processes over the shared checkpoint folder, interrupted after `stop_after`
// batches of its own (0: it finishes the epoch).
test::WorldResult run_resumed_world(const test::TempDir& shared, int world, int stop_after) {
  std::vector<std::pair<std::string, std::string>> env{{"KILN_TEST_SHARED", shared.path.string()}};
  if (stop_after > 0) env.emplace_back("KILN_TEST_STOP_AT", std::to_string(stop_after));
  test::WorldResult w = test::run_world("LearnerResumedByAnotherWorld", world, 120, env);
  for (const test::RankResult& r : w.ranks) {
    EXPECT_EQ(r.exit_code, 0) << test::describe(w);
    EXPECT_TRUE(r.report.starts_with(stop_after > 0 ? "interrupted at batch" : "done")) << test::describe(w);
  }
  return w;
}

void expect_resumed_parameters(const test::WorldResult& w, const std::vector<float>& want) {
  const std::string bytes = test::read_text(w.out / "params.bin");
  std::vector<float> got(bytes.size() / sizeof(float));
  std::memcpy(got.data(), bytes.data(), got.size() * sizeof(float));
  ASSERT_EQ(got.size(), want.size());
  float scale = 0;
  for (float v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * scale) << "weight #" << i;
}

// 2 processes stop after 2 batches (32 samples); 4 resume at their batch 1, 1 at its batch 4.
TEST(DistResume, TwoProcessesCheckpointResumesOnFourAtTheSameSample) {
  const test::TempDir shared;
  run_resumed_world(shared, 2, 2);
  const test::WorldResult w = run_resumed_world(shared, 4, 0);
  expect_resumed_parameters(w, resume_reference({16, 16, 32, 32}));
}

TEST(DistResume, TwoProcessesCheckpointResumesOnOneAtTheSameSample) {
  const test::TempDir shared;
  run_resumed_world(shared, 2, 2);
  const test::WorldResult w = run_resumed_world(shared, 1, 0);
  expect_resumed_parameters(w, resume_reference({16, 16, 8, 8, 8, 8, 8, 8, 8, 8}));
}

// Growing the world, interrupted again: 1 process stops after 4 batches (epoch-0000-batch-000004,
// 32 samples), 4 resume at batch 1 and stop after one more (batch-000002, 64 samples): the newer
// checkpoint has the smaller number, so the one it supersedes must go or the next run would take
// it. 2 processes then finish the epoch from sample 64.
TEST(DistResume, AGrownWorldInterruptedAgainLeavesItsOwnCheckpointNewest) {
  const test::TempDir shared;
  run_resumed_world(shared, 1, 4);
  run_resumed_world(shared, 4, 1);
  const auto kept = train::CheckpointDir(shared.path / "checkpoints", 2).list();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept.back().first, (train::Progress{0, 2}));
  const test::WorldResult w = run_resumed_world(shared, 2, 0);
  expect_resumed_parameters(w, resume_reference({8, 8, 8, 8, 32, 16, 16}));
}

train::LearnerState state_written_at(std::int64_t batch, train::DataLayout layout) {
  train::LearnerState state;
  state.at = {3, batch};
  state.layout = layout;
  state.train = train::PhaseSnapshot{.batches = batch, .items = batch * layout.batch_size};
  return state;
}

TEST(DistResume, ResumePointKeepsTheSampleAcrossLayouts) {
  // 2 processes of 8, 6 batches an epoch, stopped after 3: 48 samples in.
  train::LearnerState state = state_written_at(3, {2, 8, 6});
  EXPECT_EQ(train::resume_point(state, {1, 16, 6}), (train::Progress{3, 3}));  // the same global batch
  state = state_written_at(3, {2, 8, 6});
  EXPECT_EQ(train::resume_point(state, {3, 8, 4}), (train::Progress{3, 2}));
  EXPECT_EQ(state.train->batches, 2);
  EXPECT_EQ(state.train->items, 16);  // 48 samples over 3 processes
  state = state_written_at(3, {2, 8, 6});
  EXPECT_EQ(train::resume_point(state, {1, 4, 24}), (train::Progress{3, 12}));
  // At the end of the epoch's training (a Ctrl-C in validation): this run's end of it.
  state = state_written_at(6, {2, 8, 6});
  EXPECT_EQ(train::resume_point(state, {4, 10, 3}), (train::Progress{3, 3}));
  // The same steps, or no layout recorded (older checkpoints): the batch as written.
  state = state_written_at(3, {2, 8, 6});
  EXPECT_EQ(train::resume_point(state, {2, 8, 7}), (train::Progress{3, 3}));
  state = state_written_at(3, {});
  EXPECT_EQ(train::resume_point(state, {4, 8, 3}), (train::Progress{3, 3}));
}

TEST(DistResume, NoStepOfTheNewLayoutStartsThereIsAClearError) {
  train::LearnerState state = state_written_at(3, {2, 8, 6});  // 48 samples in
  try {
    train::resume_point(state, {4, 8, 3});  // 32 a step
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("written by 2 process(es) with batches of 8, 48 samples into the epoch"), std::string::npos)
        << what;
    EXPECT_NE(what.find("4 process(es) with batches of 8 take 32 samples a step"), std::string::npos) << what;
    EXPECT_NE(what.find("the same global batch of 16"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace kiln
