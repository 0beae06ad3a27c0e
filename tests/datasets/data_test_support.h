// What the data/ suites share: the reference files tests/data/gen_data.py writes under
// tests/data/datasets, reading batches back, and a guard that turns a hang into a failure.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "kiln/data/data.h"
#include "kiln/engine/kiln.h"
#include "support/expect_error.h"
#include "support/test_files.h"

namespace kiln::test {

// tests/data/datasets/<name>, written by tests/data/gen_data.py.
inline std::filesystem::path data_file(const std::string& name) { return reference_path("datasets/" + name); }

inline Json load_data_json(const std::string& name) {
  return load_reference_json("datasets/" + name, "/usr/bin/python3 tests/data/gen_data.py");
}

template <class T>
std::vector<T> values(const Tensor& t) {
  return t.to_vector<T>().get();
}

inline std::vector<float> floats(const Json& j) { return j.get<std::vector<float>>(); }

// Runs fn on another thread and fails the whole run if it has not finished within `limit`: a
// deadlocked loader must not hang the suite (the thread cannot be cancelled, so the process
// exits).
template <class Fn>
void within(std::chrono::seconds limit, Fn&& fn) {
  auto done = std::async(std::launch::async, std::forward<Fn>(fn));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: still running after %lld s (a deadlock?)\n", static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  done.get();
}

}  // namespace kiln::test
