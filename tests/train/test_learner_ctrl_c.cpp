// Ctrl-C for real: the test runs a training loop in a child process (this same test binary,
// re-run on a disabled test that only this one starts), sends it SIGINT once it is training,
// and checks that the child finished its step, wrote a checkpoint and exited cleanly, and that
// the checkpoint loads into a fresh model. Each step carries a product the device takes tens of
// milliseconds over while the host submits the step in microseconds: a loop free to run ahead
// would queue a hundred steps (seconds of work) before the signal, and the exit would wait for
// all of them; the Learner runs two steps ahead, so the child exits well within the limit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kiln/data/data.h"
#include "kiln/io/io.h"
#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"
#include "support/child_test.h"
#include "support/scratch_dir.h"
#include "kiln/train/learner.h"

namespace kiln::train {
namespace {

struct Net : nn::Module {
  nn::Linear fc1{4, 32}, fc2{32, 2};
  Tensor forward(const Tensor& x) const { return fc2(relu(fc1(x))); }
  KILN_MODULE(Net, fc1, fc2)
};

constexpr const char* kDirVariable = "KILN_TEST_CTRL_C_DIR";
constexpr int kItems = 1024, kBatch = 4, kBatches = kItems / kBatch;

// The child: trains "forever" (10,000 epochs), writing `training` after its first step.
TEST(LearnerCtrlCChild, DISABLED_TrainsUntilInterrupted) {
  const char* dir = std::getenv(kDirVariable);
  ASSERT_NE(dir, nullptr) << "started by LearnerCtrlC.ChildStopsWithALoadableCheckpoint only";
  std::vector<data::Example> items;
  // Long epochs (the end of an epoch reads the metrics, which waits for every step queued).
  for (int i = 0; i < kItems; ++i) items.push_back({{float(i % 3), float(i % 5), float(i % 7), 1.0f}, Shape{4}, i % 2, {}});
  const data::DataLoader<> loader(data::in_memory(std::move(items)), {.batch_size = kBatch});
  const std::filesystem::path marker = std::filesystem::path(dir) / "training";
  const Tensor heavy = full(Shape{2048, 2048}, 1e-3f);  // 17 GFLOP a step
  Learner learner(Net{}, std::make_unique<optim::Sgd>(optim::SgdOptions{.lr = 0.01}), std::make_unique<optim::ConstantLr>(0.01),
                  [&](const Net& m, const data::Batch& b) {
                    if (!std::filesystem::exists(marker)) std::ofstream(marker) << "1";
                    Tensor logits = m(b.inputs);
                    const Tensor busy = mean(matmul(heavy, heavy)) * 0.0;  // device work, no gradient
                    return StepOutput{nn::cross_entropy(logits, b.labels) + busy, logits, b.labels, b.size()};
                  },
                  {.epochs = 10000, .checkpoint_dir = std::filesystem::path(dir) / "checkpoints", .checkpoint_every = 10000,
                   .dashboard = DashboardMode::off});
  const FitResult r = learner.fit(loader);
  ASSERT_TRUE(r.interrupted);
  ASSERT_TRUE(r.checkpoint.has_value());
  std::exit(0);  // a clean exit is what the parent checks
}

TEST(LearnerCtrlC, ChildStopsWithALoadableCheckpoint) {
  const test::ScratchDir scratch;
  const std::filesystem::path& dir = scratch.path();
  const pid_t child =
      test::spawn_child_test("LearnerCtrlCChild.DISABLED_TrainsUntilInterrupted", {{kDirVariable, dir.string()}});

  // Wait (at most a minute) for it to train, then press Ctrl-C.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(dir / "training") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const bool started = std::filesystem::exists(dir / "training");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // some steps into the run
  ::kill(child, started ? SIGINT : SIGKILL);
  const auto signalled = std::chrono::steady_clock::now();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const double exit_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  // The step in flight, two steps of work behind it and the checkpoint: well under a second on
  // 2 cores; 3 s leaves room for a sanitizer build (its products are OpenBLAS's, uninstrumented).
  EXPECT_LT(exit_seconds, 3.0) << "the child took " << exit_seconds << " s to exit after SIGINT";
  ASSERT_TRUE(started) << "the child never started training";
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit by itself (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);

  const CheckpointDir checkpoints(dir / "checkpoints", 2);
  const auto latest = checkpoints.latest();
  ASSERT_TRUE(latest.has_value()) << "no checkpoint in " << (dir / "checkpoints");
  Net fresh;
  const io::TrainingState state = io::load_checkpoint(latest->second, fresh);
  EXPECT_GT(state.step, 0);
  EXPECT_EQ(state.step, latest->first.epoch * kBatches + latest->first.batch);
}

}  // namespace
}  // namespace kiln::train
