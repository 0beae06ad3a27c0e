// Faults: a rank killed mid-run, or one that hangs, makes every other rank throw a clear
// kiln::Error within the group's timeout (KILN_DIST_TIMEOUT): never a hang.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "training.h"
#include "world.h"

namespace kiln {
namespace {

// Trains as DISABLED_TrainMlp does; rank 1 dies (SIGKILL, no clean-up) or hangs at step 5.
void train_until_a_rank_fails(bool kill_it) {
  dist::ProcessGroup group = dist::ProcessGroup::from_env();
  const int r = group.rank(), n = group.world_size();
  test::DistMlp model = dist::replicate(group, test::DistMlp{});
  dist::GradientReducer reducer(group, model);
  optim::Adam adam(optim::AdamOptions{.lr = 1e-2});
  const std::int64_t rows = test::kGlobalBatch / n;
  try {
    for (int step = 0; step < 1000; ++step) {
      if (r == 1 && step == 5) {
        if (kill_it) raise(SIGKILL);
        // Hangs past the others' timeout, then leaves without a word.
        std::this_thread::sleep_for(std::chrono::seconds(5));
        std::_Exit(0);
      }
      model = adam.step(std::move(model), reducer.backward(model, test::step_loss(model, step, r * rows, rows)));
    }
    test::write_report(r, "no error");
  } catch (const Error& e) {
    test::write_report(r, e.what());
  }
}

TEST(DistWorker, DISABLED_AbsentRank) {
  if (test::env_rank() == 1) return;  // never comes to the rendezvous
  try {
    dist::ProcessGroup group = dist::ProcessGroup::from_env();
    test::write_report(0, "no error");
  } catch (const Error& e) {
    test::write_report(0, e.what());
  }
}

TEST(DistWorker, DISABLED_KilledRank) { train_until_a_rank_fails(true); }
TEST(DistWorker, DISABLED_HungRank) { train_until_a_rank_fails(false); }

TEST(DistFaults, AKilledRankEndsEveryOtherRankWithAClearError) {
  const test::WorldResult w = test::run_world("KilledRank", 3, 60, {{"KILN_DIST_TIMEOUT", "10"}});
  EXPECT_FALSE(w.timed_out) << test::describe(w);
  EXPECT_EQ(w.ranks[1].exit_code, -SIGKILL) << test::describe(w);
  for (int r : {0, 2}) {
    const test::RankResult& rank = w.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(rank.exit_code, 0) << test::describe(w);
    EXPECT_NE(rank.report.find("dist.all_reduce"), std::string::npos) << test::describe(w);
    EXPECT_NE(rank.report.find("rank " + std::to_string(r) + " of 3"), std::string::npos) << test::describe(w);
  }
  EXPECT_LT(w.seconds, 30) << test::describe(w);
}

TEST(DistFaults, AHungRankEndsEveryOtherRankAtTheTimeout) {
  const test::WorldResult w = test::run_world("HungRank", 2, 40, {{"KILN_DIST_TIMEOUT", "1"}});
  // Rank 0 gives up at its 1 s timeout, well before the hung rank leaves (5 s): the error says
  // so, where a lost connection would not.
  const test::RankResult& rank = w.ranks[0];
  EXPECT_NE(rank.report.find("imed out"), std::string::npos) << test::describe(w);
  EXPECT_NE(rank.report.find("dist.all_reduce"), std::string::npos) << test::describe(w);
  EXPECT_NE(rank.report.find("rank 0 of 2"), std::string::npos) << test::describe(w);
}

TEST(DistFaults, ARankThatNeverComesEndsTheRendezvousAtTheTimeout) {
  const test::WorldResult w = test::run_world("AbsentRank", 2, 40, {{"KILN_DIST_TIMEOUT", "1"}});
  EXPECT_EQ(w.ranks[0].exit_code, 0) << test::describe(w);
  EXPECT_NE(w.ranks[0].report.find("dist.rendezvous: rank 0 of 2"), std::string::npos) << test::describe(w);
  EXPECT_NE(w.ranks[0].report.find("rendezvous directory"), std::string::npos) << test::describe(w);
  EXPECT_LT(w.seconds, 20) << test::describe(w);
}

}  // namespace
}  // namespace kiln
