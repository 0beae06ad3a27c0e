// The CPU's core team (devices/cpu/core_team.h), which the skinny matmuls of served models run
// on: every part of every job runs exactly once and its writes are seen by the caller, also when
// several threads give it jobs at once (a busy team runs the job on the caller); jobs in chunks,
// where a thread stalled in its part leaves the rest of it to the other; members that sleep
// when no job comes — the suite runs under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kiln/devices/cpu/core_team.h"

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

TEST(CoreTeam, EveryChunkRunsOnceFromManyThreadsAtOnce) {
  CoreTeam& team = CoreTeam::get();
  constexpr int kThreads = 3, kJobs = 300, kChunks = 5;
  const auto parts = static_cast<std::size_t>(team.size());
  std::vector<std::vector<long>> sums(kThreads, std::vector<long>(parts * kChunks));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int job = 0; job < kJobs; ++job)
        team.run_chunked(kChunks, [&](int part, int chunk) { sums[t][static_cast<std::size_t>(part * kChunks + chunk)] += job + t; });
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    for (long s : sums[t]) EXPECT_EQ(s, kJobs * (kJobs - 1) / 2 + long(kJobs) * t) << "thread " << t;
}

// Waits (bounded) until `flag` is set; false after 5 s.
bool wait_for(const std::atomic<bool>& flag) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// A thread stalled in its part's first chunk (as the OS takes its core) leaves the rest of its
// part to the other: the stalled part's last chunk runs while its chunk 0 is still running. Part 1's
// chunk 0 stalls until its last chunk has run, which only the caller can do meanwhile; then
// part 0's, which only the member can finish. Without stealing both would time out.
TEST(CoreTeam, AStalledThreadsChunksAreTakenByTheOther) {
  CoreTeam& team = CoreTeam::get();
  if (team.size() < 2) GTEST_SKIP() << "one core: no other thread to take a stalled part";
  constexpr int kChunks = 4;
  for (int stalled = 0; stalled < 2; ++stalled) {
    SCOPED_TRACE(stalled == 0 ? "the caller stalls" : "a member stalls");
    std::atomic<bool> first_started{false}, last_done{false}, last_in_time{true};
    std::vector<std::thread::id> ran_by(kChunks);
    team.run_chunked(kChunks, [&](int part, int chunk) {
      if (part >= 2) return;
      if (part != stalled) {
        // The other part: wait until the stalled part's first chunk has started (so that its
        // own thread holds it), then run as usual.
        if (chunk == 0) last_in_time = last_in_time && wait_for(first_started);
        return;
      }
      ran_by[static_cast<std::size_t>(chunk)] = std::this_thread::get_id();
      if (chunk == 0) {
        first_started = true;
        last_in_time = last_in_time && wait_for(last_done);
      }
      if (chunk == kChunks - 1) last_done = true;
    });
    EXPECT_TRUE(last_in_time.load());
    // (The chunks between may go either way once the stalled thread resumes.)
    EXPECT_NE(ran_by[kChunks - 1], ran_by[0]);
  }
}

// After a job the members poll for the next one for up to KILN_CPU_SPIN_US (a millisecond by
// default), then sleep: never a core polling for good. And a job after they slept still runs.
TEST(CoreTeam, MembersSleepWhenNoJobComes) {
  CoreTeam& team = CoreTeam::get();
  if (team.size() < 2) GTEST_SKIP() << "one core: no members";
  std::atomic<int> parts{0};
  team.run([&](int) { parts.fetch_add(1); });
  ASSERT_EQ(parts.load(), team.size());
  // Bounded: a loaded machine may take long to run the members at all.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (team.sleeping_members() < team.size() - 1 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(team.sleeping_members(), team.size() - 1);
  parts = 0;
  team.run([&](int) { parts.fetch_add(1); });
  EXPECT_EQ(parts.load(), team.size());
}

}  // namespace
}  // namespace kiln::cpu
