// serve::HttpServer on its own (handlers of the test's making, no model), and the Batcher's
// completion-callback submit that the HTTP service uses: an answer is written exactly once
// whatever the handler does (answers twice, throws, drops its Respond), and drain() keeps its
// deadline even when a handler never answers.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "kiln/engine/kiln.h"
#include "kiln/serve/batcher.h"
#include "kiln/serve/http_server.h"
#include "tests/serve/raw_http_client.h"

namespace kiln::test {
namespace {

using namespace std::chrono_literals;

serve::HttpResponse text(int status, std::string body) {
  serve::HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

RawAnswer get(int port, const std::string& path) {
  RawConnection c(port);
  c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
  return c.read_answer(5s);
}

TEST(HttpServer, EveryRequestIsAnsweredOnceWhateverTheHandlerDoes) {
  serve::HttpServer server;
  std::mutex mutex;
  std::vector<serve::Respond> kept;
  server.route("GET", "/twice", [](serve::HttpRequest&&, serve::Respond respond) {
    respond(text(200, "first"));
    respond(text(201, "second"));  // ignored
  });
  server.route("GET", "/throws",
               [](serve::HttpRequest&&, serve::Respond) { throw Error("test", "the handler failed"); });
  server.route("GET", "/drops", [](serve::HttpRequest&&, serve::Respond) {});
  server.route("GET", "/later", [&](serve::HttpRequest&&, serve::Respond respond) {
    std::thread([respond] {
      std::this_thread::sleep_for(20ms);
      respond(text(200, "from another thread"));
    }).detach();
  });
  const int port = server.start();

  RawConnection c(port);
  ASSERT_TRUE(c.send("GET /twice HTTP/1.1\r\nHost: x\r\n\r\nGET /later HTTP/1.1\r\nHost: x\r\n\r\n"));
  const RawAnswer twice = c.read_answer();
  EXPECT_EQ(twice.status, 200);
  EXPECT_EQ(twice.body, "first");
  const RawAnswer later = c.read_answer();  // the second answer on the connection is the second request's
  EXPECT_EQ(later.status, 200);
  EXPECT_EQ(later.body, "from another thread");
  const RawAnswer thrown = get(port, "/throws");
  EXPECT_EQ(thrown.status, 500);
  EXPECT_NE(thrown.body.find("the handler failed"), std::string::npos) << thrown.body;
  const RawAnswer dropped = get(port, "/drops");
  EXPECT_EQ(dropped.status, 500);
  EXPECT_NE(dropped.body.find("dropped the request without an answer"), std::string::npos) << dropped.body;
  EXPECT_EQ(server.metrics().answered(200), 2u);
  EXPECT_EQ(server.metrics().answered(500), 2u);
}

TEST(HttpServer, DrainKeepsItsDeadlineWhenAHandlerNeverAnswers) {
  serve::HttpServerOptions options;
  options.drain_timeout = 300ms;
  serve::HttpServer server(options);
  std::promise<serve::Respond> held;
  server.route(
      "GET", "/never", [&](serve::HttpRequest&&, serve::Respond respond) { held.set_value(respond); }, true);
  const int port = server.start();
  RawConnection c(port);
  ASSERT_TRUE(c.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n"));
  serve::Respond respond = held.get_future().get();
  EXPECT_EQ(server.in_flight(), 1u);
  const auto start = std::chrono::steady_clock::now();
  server.drain();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 0.25);
  EXPECT_LT(seconds, 5.0) << "drain() overran its deadline";
  EXPECT_TRUE(c.closed_by_server(2s));
  respond(text(200, "too late"));  // after the server stopped: dropped, not a crash
}

TEST(BatcherCompletion, AnswersAsTheFutureDoesAndCountsBatchSizes) {
  serve::Batcher batcher([](const Tensor& x) { return x * 2.0f; }, Shape{3}, {.max_batch = 4});
  std::vector<std::promise<std::vector<float>>> answers(6);
  for (int i = 0; i < 6; ++i)
    batcher.submit(std::vector<float>{float(i), 1.0f, -1.0f},
                   [&answers, i](std::vector<float> row, std::exception_ptr e) {
                     if (e)
                       answers[i].set_exception(e);
                     else
                       answers[i].set_value(std::move(row));
                   });
  for (int i = 0; i < 6; ++i) EXPECT_EQ(answers[i].get_future().get(), (std::vector<float>{2.0f * i, 2.0f, -2.0f}));
  // A deadline already past: the completion gets DeadlineExceeded, and the row costs no compute.
  std::promise<std::exception_ptr> expired;
  batcher.submit(
      std::vector<float>{0, 0, 0}, [&](std::vector<float>, std::exception_ptr e) { expired.set_value(e); },
      serve::Clock::now() - 1ms);
  const std::exception_ptr e = expired.get_future().get();
  ASSERT_TRUE(e);
  EXPECT_THROW(std::rethrow_exception(e), serve::DeadlineExceeded);
  const serve::BatcherStats s = batcher.stats();
  ASSERT_EQ(s.batch_rows.size(), 5u);
  std::uint64_t rows = 0, batches = 0;
  for (std::size_t n = 1; n < s.batch_rows.size(); ++n) rows += n * s.batch_rows[n], batches += s.batch_rows[n];
  EXPECT_EQ(rows, 6u);
  EXPECT_EQ(batches, s.batches);
  EXPECT_EQ(s.expired, 1u);
  EXPECT_THROW(batcher.submit(std::vector<float>{1, 2}, [](std::vector<float>, std::exception_ptr) {}), Error);
}

}  // namespace
}  // namespace kiln::test
