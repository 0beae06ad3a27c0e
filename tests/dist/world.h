// Runs a world of N processes of this test binary on the loopback: each runs one disabled test
// ("DistWorker.DISABLED_...") as rank r, with the rendezvous in its environment and a folder to
// leave its results in. The parent waits for all of them, with a deadline: a world that does not
// finish in time is killed and reported, so a hang fails the test instead of stalling CI.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/child_test.h"  // environ, and the convention of disabled child tests

namespace kiln::test {

struct RankResult {
  int exit_code = -1;  // or minus the signal that killed it (-9: SIGKILL, also at the deadline)
  std::string report;  // what the rank wrote to its report file (an error message, a value)
  std::string log;     // its output
};

struct WorldResult {
  std::vector<RankResult> ranks;
  double seconds = 0;
  bool timed_out = false;
  std::filesystem::path out;  // the folder the ranks wrote into (removed with the last copy)
  std::shared_ptr<void> remove_out;
};

inline std::filesystem::path fresh_dir(const std::string& name) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("kiln-" + name + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) throw Error("fresh_dir", "mkdtemp failed for " + tmpl);
  return tmpl;
}

// A fresh folder, removed with its contents at the end of the scope.
struct TempDir {
  std::filesystem::path path = fresh_dir("dist");
  TempDir() = default;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Where a worker writes its report: KILN_TEST_OUT/rank<r>.txt.
inline std::filesystem::path report_path(int rank) {
  const char* out = std::getenv("KILN_TEST_OUT");
  return std::filesystem::path(out ? out : ".") / ("rank" + std::to_string(rank) + ".txt");
}
inline void write_report(int rank, const std::string& text) { std::ofstream(report_path(rank)) << text; }

// Starts this binary on `test` as one rank, its output going to `log` (not into the test's own).
inline pid_t spawn_rank(const std::string& test, const std::vector<std::pair<std::string, std::string>>& env,
                        const std::filesystem::path& log) {
  return spawn_child_test(test, env, log);
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline WorldResult run_world(const std::string& worker, int world, double deadline_s,
                             std::vector<std::pair<std::string, std::string>> extra_env = {}) {
  WorldResult result;
  result.out = fresh_dir("dist-out");
  result.remove_out = std::shared_ptr<void>(nullptr, [out = result.out](void*) {
    std::error_code ec;
    std::filesystem::remove_all(out, ec);
  });
  const std::filesystem::path rendezvous = result.out / "rendezvous";
  std::vector<pid_t> pids;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < world; ++r) {
    std::vector<std::pair<std::string, std::string>> env = extra_env;
    env.emplace_back("KILN_RANK", std::to_string(r));
    env.emplace_back("KILN_WORLD_SIZE", std::to_string(world));
    env.emplace_back("KILN_RENDEZVOUS_DIR", rendezvous.string());
    env.emplace_back("KILN_TEST_OUT", result.out.string());
    pids.push_back(
        spawn_rank("DistWorker.DISABLED_" + worker, env, result.out / ("rank" + std::to_string(r) + ".log")));
  }
  result.ranks.resize(static_cast<std::size_t>(world));
  int running = world;
  while (running > 0) {
    for (int r = 0; r < world; ++r) {
      pid_t& pid = pids[static_cast<std::size_t>(r)];
      if (pid <= 0) continue;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        result.ranks[static_cast<std::size_t>(r)].exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                                                              : WIFSIGNALED(status) ? -WTERMSIG(status)
                                                                                    : -1;
        pid = 0;
        --running;
      }
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (running > 0 && elapsed > deadline_s) {
      result.timed_out = true;
      for (pid_t pid : pids)
        if (pid > 0) kill(pid, SIGKILL);
      for (pid_t pid : pids)
        if (pid > 0) waitpid(pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r < world; ++r) {
    result.ranks[static_cast<std::size_t>(r)].report = read_text(result.out / ("rank" + std::to_string(r) + ".txt"));
    result.ranks[static_cast<std::size_t>(r)].log = read_text(result.out / ("rank" + std::to_string(r) + ".log"));
  }
  return result;
}

// The world's exit codes and reports, for a failure message.
inline std::string describe(const WorldResult& w) {
  std::string s = "world of " + std::to_string(w.ranks.size()) + " ran " + std::to_string(w.seconds) + " s" +
                  (w.timed_out ? " and was killed at its deadline" : "") + ":";
  for (std::size_t r = 0; r < w.ranks.size(); ++r)
    s += "\n  rank " + std::to_string(r) + " exit " + std::to_string(w.ranks[r].exit_code) + ": " + w.ranks[r].report +
         "\n  its output:\n" + w.ranks[r].log;
  return s;
}

// Success when every rank exited 0 and reported "ok"; otherwise the whole world, described.
inline ::testing::AssertionResult every_rank_ok(const WorldResult& w) {
  for (const RankResult& r : w.ranks)
    if (r.exit_code != 0 || r.report != "ok") return ::testing::AssertionFailure() << describe(w);
  if (w.ranks.empty()) return ::testing::AssertionFailure() << "no rank ran";
  return ::testing::AssertionSuccess();
}

inline int env_rank() {
  const char* r = std::getenv("KILN_RANK");
  return r ? std::atoi(r) : 0;
}

}  // namespace kiln::test
