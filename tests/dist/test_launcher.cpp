// kiln-launch: starts N ranks of a program with the rendezvous in their environment (the ranks
// meet and pass the collectives' checks), and ends with a failing rank's exit status.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "world.h"

namespace kiln {
namespace {

// Runs `kiln-launch <args> -- <this binary> --gtest_filter=DistWorker.DISABLED_<worker>`; its exit status.
int launch(const std::string& args, const std::string& worker, const std::filesystem::path& out) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "KILN_TEST_OUT=" + out.string() + " " + KILN_LAUNCH_PATH + " " + args + " -- " + self +
                          " --gtest_also_run_disabled_tests --gtest_filter=DistWorker.DISABLED_" + worker + " > " +
                          (out / "log.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read(const std::filesystem::path& p) { return test::read_text(p); }

TEST(DistLaunch, StartsRanksThatMeet) {
  const test::TempDir dir;
  const std::filesystem::path& out = dir.path;
  EXPECT_EQ(launch("-n 2 --timeout 60", "Collectives", out), 0) << read(out / "log.txt");
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(read(out / ("rank" + std::to_string(r) + ".txt")), "ok") << read(out / "log.txt");
}

TEST(DistLaunch, AFailingRankFailsTheJob) {
  const test::TempDir dir;
  const std::filesystem::path& out = dir.path;
  EXPECT_NE(launch("-n 3 --timeout 10", "KilledRank", out), 0);
  EXPECT_NE(read(out / "log.txt").find("kiln-launch: rank 1"), std::string::npos) << read(out / "log.txt");
}

TEST(DistLaunch, BadArgumentsAreReported) {
  const test::TempDir dir;
  const std::filesystem::path& out = dir.path;
  const std::string cmd = std::string(KILN_LAUNCH_PATH) + " -n 0 -- true > " + (out / "log.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(read(out / "log.txt").find("-n must be at least 1"), std::string::npos);
}

TEST(DistLaunch, RanksTakeCtrlCAsUsual) {
  // The launcher ignores SIGINT itself (the terminal sends it to every rank); the ranks must not.
  const std::string cmd = std::string(KILN_LAUNCH_PATH) + " -n 1 -- sh -c 'kill -INT $$; sleep 5' 2>/dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 4.0);
}

TEST(DistLaunch, SigtermReachesEveryRank) {
  const char* argv[] = {KILN_LAUNCH_PATH, "-n", "2", "--", "sleep", "30", nullptr};
  pid_t launcher = 0;
  ASSERT_EQ(posix_spawn(&launcher, KILN_LAUNCH_PATH, nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  kill(launcher, SIGTERM);
  int status = 0;
  waitpid(launcher, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);  // the ranks' fate, not the launcher's own death
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

}  // namespace
}  // namespace kiln
