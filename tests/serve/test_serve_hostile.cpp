// examples/serve under hostile load, over loopback: slow clients (a header a line at a time, a
// body shorter than its Content-Length) beside well-behaved ones, overload past capacity from
// many keep-alive connections, a second server on the same port, a cap on connections, bad
// requests, and readiness. Where requests are served, every one sent gets exactly one answer:
// the model's own (checked against the model run alone) or a 503 with Retry-After.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "examples/serve/classify_server.h"
#include "tests/serve/raw_http_client.h"
#include "tests/serve/serve_test_fixtures.h"

namespace kiln::test {
namespace {

using namespace std::chrono_literals;
using examples::ClassifyServer;
using examples::ServerOptions;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Time bounds stretch under ThreadSanitizer, which runs the model many times slower.
#if defined(__SANITIZE_THREAD__)
constexpr double kSlower = 20;
#else
constexpr double kSlower = 1;
#endif

void expect_scores(const json& body, const std::vector<float>& expected) {
  const auto scores = body.at("scores").get<std::vector<float>>();
  ASSERT_EQ(scores.size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) EXPECT_NEAR(scores[k], expected[k], 1e-4) << "score " << k;
  const auto best = std::max_element(expected.begin(), expected.end()) - expected.begin();
  EXPECT_EQ(body.at("class").get<std::int64_t>(), best);
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

TEST(ServeHostile, SlowClientsDoNotTakeTheServiceAndGetA408Or400AtTheirDeadline) {
  const SmallCNN model = seeded_model(31);
  ServerOptions options;
  options.batcher = {.max_batch = 8, .max_wait = 200us, .max_queue = 64};
  options.http.header_timeout = 300ms;
  options.http.body_timeout = 300ms;
  options.max_queue_delay = std::chrono::minutes(1);  // about slow clients, not capacity
  ClassifyServer server(examples::classify_with(model), options);
  const int port = server.start();

  // 32 connections trickling a header, and one whose body stops short of its Content-Length.
  constexpr int kSlow = 32;
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(slow.back()->send("POST /v1/classify HTTP/1.1\r\nHost: x\r\n"));
  }
  RawConnection short_body(port);
  const auto short_sent = Clock::now();
  ASSERT_TRUE(short_body.send(
      "POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n" +
      std::string(100, ' ')));

  // Meanwhile four well-behaved keep-alive clients are served as usual.
  constexpr int kClients = 4, kPerClient = 10;
  std::vector<Answer> answers(kClients * kPerClient);
  std::vector<std::jthread> clients;
  const auto start = Clock::now();
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      const auto client = loopback_client(port);
      for (int i = 0; i < kPerClient; ++i) {
        const int id = c * kPerClient + i;
        answers[id] = post_classify(*client, classify_body(test_image(100 + id), id));
        if (i == 0) slow[c]->send("X-Trickle: 1\r\n");  // a header line now and then
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_LT(ms_since(start), 250.0 * kClients * kPerClient * kSlower) << "the slow clients held the service back";
  std::vector<std::vector<float>> images;
  for (int id = 0; id < kClients * kPerClient; ++id) images.push_back(test_image(100 + id));
  const auto expected = reference_scores(model, images);
  for (int id = 0; id < kClients * kPerClient; ++id) {
    ASSERT_EQ(answers[id].status, 200) << answers[id].body.dump();
    EXPECT_EQ(answers[id].body.value("id", -1), id);
    expect_scores(answers[id].body, expected[id]);
  }

  // Each slow header: 408 once its deadline passed, and closed.
  for (auto& c : slow) {
    const RawAnswer a = c->read_answer(5s);
    EXPECT_EQ(a.status, 408) << a.body;
    EXPECT_NE(a.body.find("header did not arrive within 300 ms"), std::string::npos) << a.body;
    EXPECT_TRUE(c->closed_by_server(2s));
  }
  // The short body: 400 naming the shortfall, after the body deadline, not seconds later.
  const RawAnswer a = short_body.read_answer(5s);
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_NE(a.body.find("ended after 100 of the 5000 bytes its Content-Length announced"), std::string::npos) << a.body;
  EXPECT_LT(ms_since(short_sent), 3000.0 * kSlower);
  EXPECT_EQ(server.http_metrics().answered(408), std::uint64_t{kSlow});
  EXPECT_EQ(server.stats().completed, std::uint64_t{kClients * kPerClient});
}

TEST(ServeHostile, OverloadPastCapacityIsAFast503AndEveryConnectionIsServed) {
  const SmallCNN model = seeded_model(32);
  // Capacity kept small: each forward pass takes at least 4 ms, 4 rows at most, 8 may wait.
  auto slow_classify = [inner = examples::classify_with(model)](const Tensor& batch) {
    std::this_thread::sleep_for(4ms);
    return inner(batch);
  };
  ServerOptions options;
  options.batcher = {.max_batch = 4, .max_wait = 0us, .max_queue = 8};
  options.warm_up_sizes = {1, 4};
  ClassifyServer server(slow_classify, options);
  const int port = server.start();

  constexpr int kConnections = 48;
#if defined(__SANITIZE_THREAD__)
  constexpr int kPerConnection = 4;
#else
  constexpr int kPerConnection = 12;
#endif
  constexpr int kTotal = kConnections * kPerConnection;
  std::vector<Answer> answers(kTotal);
  std::vector<double> latency_ms(kTotal);
  std::vector<std::jthread> clients;
  for (int c = 0; c < kConnections; ++c)
    clients.emplace_back([&, c] {
      const auto client = loopback_client(port);
      for (int i = 0; i < kPerConnection; ++i) {
        const int id = c * kPerConnection + i;
        const auto sent = Clock::now();
        answers[id] = post_classify(*client, classify_body(test_image(id % 64), id));
        latency_ms[id] = ms_since(sent);
      }
    });
  for (auto& t : clients) t.join();

  std::vector<std::vector<float>> images;
  for (int i = 0; i < 64; ++i) images.push_back(test_image(i));
  const auto expected = reference_scores(model, images);
  int served = 0, refused = 0;
  std::vector<double> refusal_ms, served_ms;
  for (int id = 0; id < kTotal; ++id) {
    const Answer& a = answers[id];
    if (a.status == 200) {
      ++served;
      served_ms.push_back(latency_ms[id]);
      EXPECT_EQ(a.body.value("id", -1), id);
      expect_scores(a.body, expected[id % 64]);
    } else {
      ASSERT_EQ(a.status, 503) << "request " << id << ": " << a.body.dump();
      EXPECT_EQ(a.retry_after, "1");
      ++refused;
      refusal_ms.push_back(latency_ms[id]);
    }
  }
  EXPECT_EQ(served + refused, kTotal);
  EXPECT_GT(refused, 0) << "48 connections against a capacity of 12 were never refused";
  EXPECT_EQ(server.stats().completed, std::uint64_t(served)) << "an answer was lost or doubled";
  EXPECT_EQ(server.http_metrics().answered(200), std::uint64_t(served));
  EXPECT_EQ(server.http_metrics().answered(503), std::uint64_t(refused));
  EXPECT_GT(served, 0);
  // Fairness: every connection had every request answered, none waited long (a starved
  // keep-alive connection would show here as a request seconds old).
  EXPECT_LT(*std::max_element(latency_ms.begin(), latency_ms.end()), 2000.0 * kSlower);
  // A refusal is fast: it waits for no batch (every batch takes 4 ms at least).
  std::sort(refusal_ms.begin(), refusal_ms.end());
  std::sort(served_ms.begin(), served_ms.end());
  EXPECT_LT(refusal_ms[refusal_ms.size() / 2], served_ms[served_ms.size() / 2])
      << "the median 503 took as long as the median answer";
}

TEST(ServeHostile, ASecondServerOnTheSamePortIsRefusedAndTheFirstKeepsServing) {
  const SmallCNN model = seeded_model(33);
  ServerOptions options;
  options.warm_up_sizes = {1};
  ClassifyServer first(examples::classify_with(model), options);
  const int port = first.start();
  ClassifyServer second(examples::classify_with(seeded_model(34)), options);
  try {
    second.listen("127.0.0.1", port);
    FAIL() << "a second server started on port " << port;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port) + ": the port is in use"),
              std::string::npos)
        << e.what();
  }
  // Every request goes to the first server's model.
  const auto client = loopback_client(port);
  for (int id = 0; id < 10; ++id) {
    const Answer a = post_classify(*client, classify_body(test_image(id), id));
    ASSERT_EQ(a.status, 200);
    expect_scores(a.body, reference_scores(model, test_image(id)).get());
  }
}

TEST(ServeHostile, BadRequestsGetTheRight4xxAndMessage) {
  ServerOptions options;
  options.warm_up_sizes = {1};
  ClassifyServer server(examples::classify_with(seeded_model(35)), options);
  const int port = server.start();
  struct Case {
    std::string request;
    int status;
    std::string message;
  };
  const std::string body = classify_body(test_image(0), 0);
  const std::vector<Case> cases = {
      {classify_request("{\"image\": [1e400]}"), 400, "the body holds a number out of range"},
      {classify_request("{\"image\": [0.5, ]}"), 400, "the body is not JSON"},
      {"GET /" + std::string(3000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, "request target is longer than 2048"},
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, "request target is longer than 2048"},
      {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n", 431,
       "header fields are larger than 8192 bytes"},
      {"GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404, "no such endpoint: GET /v1/nothing"},
      {"GET /v1/classify HTTP/1.1\r\nHost: x\r\n\r\n", 405, "no such endpoint: GET /v1/classify"},
      {"HELLO\r\n\r\n", 400, "malformed HTTP request"},
      {"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", 413,
       "body is larger than 1048576 bytes"},
      {"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nContent-Length: 13\r\n\r\n", 400,
       "malformed HTTP request"},
  };
  for (const Case& c : cases) {
    RawConnection connection(port);
    ASSERT_TRUE(connection.send(c.request));
    const RawAnswer a = connection.read_answer();
    EXPECT_EQ(a.status, c.status) << c.request.substr(0, 60) << ": " << a.body;
    EXPECT_NE(a.body.find(c.message), std::string::npos) << c.request.substr(0, 60) << ": " << a.body;
    EXPECT_EQ(json::parse(a.body, nullptr, false).is_object(), true) << a.body;
  }
  // Expect: 100-continue (curl's way with a body over 1 KiB) gets its 100, then its answer.
  RawConnection curl_like(port);
  ASSERT_TRUE(curl_like.send("POST /v1/classify HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(curl_like.read_answer().status, 100);
  ASSERT_TRUE(curl_like.send(body));
  EXPECT_EQ(curl_like.read_answer().status, 200);
  EXPECT_EQ(server.stats().requests, 1u) << "a bad request never reaches the batcher";
}

TEST(ServeHostile, ConnectionsPastTheCapGetA503AndAreClosed) {
  ServerOptions options;
  options.warm_up_sizes = {1};
  options.http.max_connections = 4;
  ClassifyServer server(examples::classify_with(seeded_model(36)), options);
  const int port = server.start();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(held.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(held.back()->read_answer().status, 200);
  }
  RawConnection one_more(port);
  const RawAnswer a = one_more.read_answer();
  EXPECT_EQ(a.status, 503);
  EXPECT_NE(a.body.find("too many connections (4 open)"), std::string::npos) << a.body;
  EXPECT_TRUE(one_more.closed_by_server());
  held.pop_back();  // one goes: there is room again
  ASSERT_TRUE(eventually([&] {
    RawConnection c(port);
    return c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") && c.read_answer().status == 200;
  }));
}

TEST(ServeHostile, ReadyOnlyAfterWarmUpAndMetricsInPrometheusText) {
  const SmallCNN model = seeded_model(37);
  Gate gate;
  gate.close();  // holds the warm-up's first pass
  ServerOptions options;
  options.batcher = {.max_batch = 2, .max_wait = 0us, .max_queue = 8};
  ClassifyServer server(gate.wrap(examples::classify_with(model)), options);
  const int port = server.listen();
  std::jthread warm([&] { server.warm_up(); });
  struct OpenAtExit {
    Gate& gate;
    ~OpenAtExit() { gate.open(); }
  } const opener{gate};
  ASSERT_TRUE(gate.wait_entered(1));
  const auto client = loopback_client(port);
  EXPECT_EQ(client->Get("/healthz")->status, 200) << "alive while warming up";
  EXPECT_EQ(client->Get("/readyz")->status, 503);
  const Answer early = post_classify(*client, classify_body(test_image(0), 0));
  EXPECT_EQ(early.status, 503);
  EXPECT_NE(early.body.value("error", "").find("warming up"), std::string::npos) << early.body.dump();
  gate.open();
  warm.join();
  EXPECT_EQ(client->Get("/readyz")->status, 200);
  for (int id = 0; id < 3; ++id) ASSERT_EQ(post_classify(*client, classify_body(test_image(id), id)).status, 200);

  const httplib::Result m = client->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4");
  for (const std::string line :
       {"kiln_http_requests_total{code=\"200\"} 5", "kiln_http_requests_total{code=\"503\"} 2",
        "kiln_http_request_duration_seconds_count 7", "kiln_batcher_queue_depth 0", "kiln_batcher_completed_total 3",
        "kiln_batcher_batch_rows_count 3", "kiln_batcher_batch_rows_sum 3", "kiln_ready 1",
        "# TYPE kiln_batcher_batch_rows histogram"})
    EXPECT_NE(m->body.find(line + "\n"), std::string::npos) << "no line " << line << " in\n" << m->body;
}

}  // namespace
}  // namespace kiln::test
