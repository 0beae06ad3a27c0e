// SIGTERM for real: the test runs the service in a child process (this same test binary, re-run
// on a disabled test that only this one starts) on a model saved with io/, fills it with
// requests held inside their batches, sends SIGTERM, and checks that every request sent before
// the signal is answered as the model alone answers it, that a request sent during the drain is
// refused with 503 and Retry-After, and that the child exits by itself with status 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "examples/serve/classify_server.h"
#include "examples/serve/stop_signal.h"
#include "kiln/io/io.h"
#include "support/scratch_dir.h"
#include "tests/serve/serve_test_fixtures.h"
#include "support/child_test.h"

namespace kiln::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kDirVariable = "KILN_TEST_SERVE_DIR";
constexpr int kRequests = 12;

// The child: what examples/serve/main.cpp does, on the parent's model file, with every batch
// held until the parent writes `release` (so that the parent knows what is in flight when it
// sends the signal). It writes its port to `port` once it listens.
TEST(ServeSigtermChild, DISABLED_ServesUntilSigterm) {
  const char* dir_text = std::getenv(kDirVariable);
  ASSERT_NE(dir_text, nullptr) << "started by ServeSigterm.AnswersEveryRequestInFlightAndExits only";
  const std::filesystem::path dir = dir_text;
  examples::StopSignal stop_signal;
  SmallCNN model;
  io::load_model(model, dir / "model.safetensors");

  std::atomic<bool> hold{false};
  auto classify = [&hold, &dir, inner = examples::classify_with(model)](const Tensor& batch) {
    // Bounded, in case the parent is gone: a child must never outlive its test for long.
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (hold && !std::filesystem::exists(dir / "release") && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(2ms);
    return inner(batch);
  };
  examples::ServerOptions options;
  options.batcher = {.max_batch = 4, .max_wait = 0us, .max_queue = 64};
  options.http_threads = kRequests + 4;
  examples::ClassifyServer server(classify, options);
  const int port = server.start();
  hold = true;
  std::ofstream(dir / "port.tmp") << port;
  std::filesystem::rename(dir / "port.tmp", dir / "port");

  EXPECT_EQ(stop_signal.wait(), SIGTERM);
  server.stop();
  EXPECT_EQ(server.stats().completed, std::uint64_t{kRequests});
}

TEST(ServeSigterm, AnswersEveryRequestInFlightAndExits) {
  const ScratchDir scratch;
  const std::filesystem::path& dir = scratch.path();
  manual_seed(21);
  SmallCNN model;
  io::save_model(model, dir / "model.safetensors");
  model.eval();

  const pid_t child = spawn_child_test("ServeSigtermChild.DISABLED_ServesUntilSigterm", {{kDirVariable, dir.string()}});
  // Whatever fails below, no child is left running, and no sender waits for one (ReapFirst,
  // declared after the senders, ends the child before they join).
  struct Reaper {
    pid_t pid;
    bool reaped = false;
    void reap() {
      if (reaped) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      reaped = true;
    }
    ~Reaper() { reap(); }
  } reaper{child};
  struct ReapFirst {
    Reaper& reaper;
    ~ReapFirst() { reaper.reap(); }
  };

  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir / "port"); })) << "the child never listened";
  int port = 0;
  std::ifstream(dir / "port") >> port;
  ASSERT_GT(port, 0);

  // Every request sent and admitted: one batch of 4 held, 8 waiting.
  std::vector<Answer> answers(kRequests);
  std::vector<std::jthread> senders;
  const ReapFirst reap_first{reaper};
  for (int id = 0; id < kRequests; ++id)
    senders.emplace_back(
        [&, id] { answers[id] = post_classify(*loopback_client(port), classify_body(test_image(id), id)); });
  const auto monitor = loopback_client(port);
  ASSERT_TRUE(eventually([&] {
    const httplib::Result r = monitor->Get("/v1/stats");
    return r && nlohmann::json::parse(r->body).at("requests") == kRequests;
  }));

  ASSERT_EQ(::kill(child, SIGTERM), 0);
  ASSERT_TRUE(eventually([&] {
    const httplib::Result r = monitor->Get("/healthz");
    return r && r->status == 503;
  })) << "the child did not start draining";
  const Answer during = post_classify(*loopback_client(port), classify_body(test_image(99), 99));
  EXPECT_EQ(during.status, 503) << during.body.dump();
  EXPECT_EQ(during.retry_after, "1");

  std::ofstream(dir / "release") << "go";
  for (auto& t : senders) t.join();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  reaper.reaped = true;
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit by itself (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);

  for (int id = 0; id < kRequests; ++id) {
    ASSERT_EQ(answers[id].status, 200) << "request " << id << ": " << answers[id].body.dump();
    EXPECT_EQ(answers[id].body.value("id", -1), id);
    const std::vector<float> expected = reference_scores(model, test_image(id)).get();
    const auto scores = answers[id].body.at("scores").get<std::vector<float>>();
    ASSERT_EQ(scores.size(), expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) EXPECT_NEAR(scores[k], expected[k], 1e-4);
  }
  EXPECT_EQ(post_classify(*loopback_client(port), classify_body(test_image(0), 0)).status, 0) << "still listening";
}

}  // namespace
}  // namespace kiln::test
