// The CPU's core team (devices/cpu/core_team.h), which the skinny matmuls of served models run
// on: every part of every job runs exactly once and its writes are seen by the caller, also when
// several threads give it jobs at once (a busy team runs the job on the caller) — the suite runs
// under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "devices/cpu/core_team.h"

namespace kiln::cpu {
namespace {

TEST(CoreTeam, EveryPartRunsOnceAndItsWritesAreSeen) {
  CoreTeam& team = CoreTeam::get();
  ASSERT_GE(team.size(), 1);
  std::vector<int> slots(static_cast<std::size_t>(team.size()));
  for (int job = 1; job <= 2000; ++job) {
    team.run([&](int part) { slots[static_cast<std::size_t>(part)] += job; });  // plain writes
  }
  for (int part = 0; part < team.size(); ++part) EXPECT_EQ(slots[static_cast<std::size_t>(part)], 2000 * 2001 / 2) << part;
}

TEST(CoreTeam, JobsFromManyThreadsAtOnce) {
  CoreTeam& team = CoreTeam::get();
  constexpr int kThreads = 4, kJobs = 500;
  std::vector<std::vector<long>> sums(kThreads, std::vector<long>(static_cast<std::size_t>(team.size())));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int job = 0; job < kJobs; ++job) team.run([&](int part) { sums[t][static_cast<std::size_t>(part)] += job + t; });
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    for (long s : sums[t]) EXPECT_EQ(s, kJobs * (kJobs - 1) / 2 + long(kJobs) * t) << "thread " << t;
}

}  // namespace
}  // namespace kiln::cpu
