// Runs one (disabled) test of this test binary in a child process: for what a test can only see
// in a fresh process (start-up, signals, an engine that has not opened its GPUs). The child test
// is named DISABLED_... so that a normal run skips it; the parent passes what it needs through
// the environment, set only for the child.
#pragma once
#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "kiln/base/error.h"

extern char** environ;

namespace kiln::test {

// Starts this binary on `test` ("Suite.DISABLED_Name") with `env` added to the environment, its
// output going to `log` where one is given (else into the test's own); returns the child's pid.
// Throws kiln::Error when it cannot start.
inline pid_t spawn_child_test(const std::string& test, const std::vector<std::pair<std::string, std::string>>& env = {},
                              const std::filesystem::path& log = {}) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=" + test;
  std::string disabled = "--gtest_also_run_disabled_tests";
  char* argv[] = {const_cast<char*>(self.c_str()), filter.data(), disabled.data(), nullptr};
  std::vector<std::string> entries;
  for (char** e = environ; *e; ++e) entries.emplace_back(*e);
  for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  pid_t child = 0;
  const int rc = ::posix_spawn(&child, self.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error("spawn_child_test", "could not start " + self + " on " + test);
  return child;
}

}  // namespace kiln::test
