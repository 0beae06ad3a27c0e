// The engine's timeline (base/trace.h, KILN_TRACE): a traced run writes a Chrome trace whose spans
// are the kernels that ran (by op name), the scheduler's batches and the waits on futures, each
// with a thread and a non-negative duration; nothing is recorded once the trace is written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "kiln/engine/kiln.h"
#include "kiln/base/trace.h"

namespace kiln {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(Trace, RecordsKernelsBatchesAndWaits) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / ("kiln_trace_" + std::to_string(getpid()) + ".json");
  trace::start(path.string());
  Generator gen(1);
  const Tensor a = randn(Shape{64, 96}, gen), b = randn(Shape{96, 32}, gen);
  const std::vector<float> c = sum(relu(matmul(a, b)), {1}).to_vector<float>().get();
  ASSERT_EQ(c.size(), 64u);
  // A future is ready as soon as its value is set, before the thread that set it closes its
  // batch's span: the sync's step waits for that step to end.
  sync(Device::cpu()).get();
  trace::write();

  const nlohmann::json j = read_json(path);
  std::filesystem::remove(path);
  std::set<std::string> names, categories;
  for (const nlohmann::json& e : j.at("traceEvents")) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("ts").get<double>(), 0.0);
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    EXPECT_GT(e.at("tid").get<long>(), 0);
    names.insert(e.at("name").get<std::string>());
    categories.insert(e.at("cat").get<std::string>());
  }
  EXPECT_TRUE(categories.count("kernel")) << "no kernel spans";
  EXPECT_TRUE(names.count("batch")) << "no scheduler batch";
  EXPECT_TRUE(names.count("wait")) << "no wait on a future";
  EXPECT_TRUE(names.count("rand_normal")) << "the random fill (an unfused kernel) is missing";
  EXPECT_FALSE(trace::enabled());

  // After write(): nothing more is recorded, and no file appears.
  (void)sum(a).item<float>().get();
  trace::write();
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace kiln
