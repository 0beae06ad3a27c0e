// kiln-launch: starts N ranks of a program with the rendezvous in their environment (the ranks
// meet and pass the collectives' checks), and ends with a failing rank's exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

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

}  // namespace
}  // namespace kiln
