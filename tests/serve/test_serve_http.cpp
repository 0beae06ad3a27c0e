// examples/serve over loopback HTTP, in-process: a bounded load from 8 connections, where every
// request must be answered exactly once and as the model alone answers it; a full queue (503
// with Retry-After before the body is parsed, and nothing lost); deadlines (504); malformed
// bodies (400); a drain in progress. tests/serve/test_serve_hostile.cpp has the hostile clients.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
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

constexpr double kTolerance = 1e-4;

// The scores of a 200 answer against the model's own scores of the same image.
void expect_answer_of_model(const Answer& a, const std::vector<float>& expected) {
  ASSERT_EQ(a.status, 200) << a.body.dump();
  const auto scores = a.body.at("scores").get<std::vector<float>>();
  ASSERT_EQ(scores.size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) EXPECT_NEAR(scores[k], expected[k], kTolerance) << "score " << k;
  const auto best = std::max_element(expected.begin(), expected.end()) - expected.begin();
  EXPECT_EQ(a.body.at("class").get<std::int64_t>(), best);
  EXPECT_EQ(a.body.at("label").get<std::string>(), kFashionMnistClasses[best]);
}

// ... and against the model run alone on that image.
void expect_answer_of_model(const Answer& a, const SmallCNN& model, const std::vector<float>& image) {
  expect_answer_of_model(a, reference_scores(model, image).get());
}

// A server whose one worker runs one request per batch behind a gate (closed once it listens),
// with room for `max_queue` waiting requests. A test declares the threads that send to it after
// it and an OpenAtExit after them: if a check fails midway, the gate opens, the requests end,
// the threads join, and only then the server stops.
struct GatedServer {
  Gate gate;
  std::unique_ptr<ClassifyServer> server;
  int port = 0;
  GatedServer(const SmallCNN& model, std::size_t max_queue) {
    ServerOptions options;
    options.batcher = {.max_batch = 1, .max_wait = 0us, .max_queue = max_queue};
    options.max_queue_delay = std::chrono::minutes(1);  // held requests wait on the gate, not on capacity
    server = std::make_unique<ClassifyServer>(gate.wrap(examples::classify_with(model)), options);
    port = server->start();
    gate.close();
  }
};

struct OpenAtExit {
  Gate& gate;
  ~OpenAtExit() { gate.open(); }
};

TEST(ServeHttp, LoadFromEightConnectionsIsAnsweredOnceEachAsTheModelAlone) {
  const SmallCNN model = seeded_model(11);
  ServerOptions options;
  options.batcher = {.max_batch = 16, .max_wait = 500us, .max_queue = 256};
  ClassifyServer server(examples::classify_with(model), options);
  const int port = server.start();

#if defined(__SANITIZE_THREAD__)
  constexpr int kPerClient = 20;  // the same interleavings, within the time bound at TSan's speed
#else
  constexpr int kPerClient = 50;
#endif
  constexpr int kClients = 8, kTotal = kClients * kPerClient;
  const auto give_up = std::chrono::steady_clock::now() + 60s;  // the load is bounded in time as well as count
  std::vector<Answer> answers(kTotal);
  std::vector<double> latency_us(kTotal, -1.0);
  std::vector<std::atomic<int>> seen(kTotal);
  std::vector<std::string> bodies(kTotal);
  for (int id = 0; id < kTotal; ++id) bodies[id] = classify_body(test_image(id), id);

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      const auto client = loopback_client(port);
      for (int i = 0; i < kPerClient && std::chrono::steady_clock::now() < give_up; ++i) {
        const int id = c * kPerClient + i;
        const auto sent = std::chrono::steady_clock::now();
        Answer a = post_classify(*client, bodies[id]);
        latency_us[id] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - sent).count();
        // Filed under the id the server echoed, so that a mixed-up or doubled answer shows.
        if (a.status == 200 && a.body.contains("id")) {
          const int echoed = a.body["id"].get<int>();
          if (echoed >= 0 && echoed < kTotal) {
            seen[echoed].fetch_add(1);
            answers[echoed] = std::move(a);
          }
        } else {
          answers[id] = std::move(a);
        }
      }
    });
  for (auto& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  server.stop();

  std::vector<double> sorted = latency_us;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_GE(sorted.front(), 0.0) << "the time bound cut the load short";
  const serve::BatcherStats stats = server.stats();
  std::printf(
      "serve load: %d requests from %d connections in %.2f s: %.0f req/s, p50 %.0f us, p99 %.0f us, max %.0f us, mean "
      "batch %.1f\n",
      kTotal, kClients, seconds, kTotal / seconds, sorted[kTotal / 2], sorted[kTotal * 99 / 100], sorted.back(),
      stats.mean_batch());

  std::vector<std::vector<float>> images(kTotal);
  for (int id = 0; id < kTotal; ++id) images[id] = test_image(id);
  const std::vector<std::vector<float>> expected = reference_scores(model, images);
  for (int id = 0; id < kTotal; ++id) {
    ASSERT_EQ(seen[id].load(), 1) << "request " << id << " answered " << seen[id].load() << " times; last answer "
                                  << answers[id].status << " " << answers[id].body.dump();
    expect_answer_of_model(answers[id], expected[id]);
  }
  EXPECT_EQ(stats.requests, std::uint64_t{kTotal});
  EXPECT_EQ(stats.completed, std::uint64_t{kTotal});
}

TEST(ServeHttp, AFullQueueIsA503WithRetryAfterBeforeTheBodyIsParsedAndLosesNothing) {
  const SmallCNN model = seeded_model(12);
  GatedServer g(model, 2);
  Gate& gate = g.gate;
  ClassifyServer* server = g.server.get();
  const int port = g.port;

  // One request held in its batch, two waiting: the queue is full.
  std::vector<Answer> held(3);
  std::vector<std::jthread> senders;
  const OpenAtExit opener{gate};
  const int before = gate.entered();
  for (int id = 0; id < 3; ++id) {
    senders.emplace_back(
        [&, id] { held[id] = post_classify(*loopback_client(port), classify_body(test_image(id), id)); });
    if (id == 0) {
      ASSERT_TRUE(gate.wait_entered(before + 1));
    }
  }
  ASSERT_TRUE(eventually([&] { return server->stats().queued == 2; }));

  // Five more, at once: each refused at once, while the three above are still held, from its
  // header alone (its body is read, never parsed: the answer names no id).
  std::vector<Answer> refused(5);
  std::vector<std::jthread> burst;
  for (int i = 0; i < 5; ++i)
    burst.emplace_back(
        [&, i] { refused[i] = post_classify(*loopback_client(port), classify_body(test_image(3 + i), 3 + i)); });
  for (auto& t : burst) t.join();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(refused[i].status, 503) << refused[i].body.dump();
    EXPECT_EQ(refused[i].retry_after, "1");
    EXPECT_EQ(refused[i].body.value("id", -1), -1) << "refused before its body was parsed";
    EXPECT_NE(refused[i].body.value("error", "").find("queue is full"), std::string::npos) << refused[i].body.dump();
  }

  // A refused body is skipped, not parsed: its connection stays in step for the next request.
  const auto client = loopback_client(port);
  const auto sent = std::chrono::steady_clock::now();
  const Answer again = post_classify(*client, classify_body(test_image(3), 3));
  EXPECT_EQ(again.status, 503) << again.body.dump();
  // Not held until the body deadline (seconds) for bytes that never come.
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(2));

  gate.open();
  for (auto& t : senders) t.join();
  for (int id = 0; id < 3; ++id) {
    EXPECT_EQ(held[id].body.value("id", -1), id);
    expect_answer_of_model(held[id], model, test_image(id));
  }
  // A refused request is safe to send again: once the queue has room it is answered, here on
  // the connection that carried a refusal.
  for (int i = 0; i < 5; ++i)
    expect_answer_of_model(post_classify(*client, classify_body(test_image(3 + i), 3 + i)), model, test_image(3 + i));
  const serve::BatcherStats s = server->stats();
  EXPECT_EQ(s.rejected_full, 0u) << "refused by admission, before the batcher";
  EXPECT_EQ(s.completed, 8u);
  EXPECT_EQ(server->http_metrics().answered(503), 6u);
  EXPECT_EQ(server->http_metrics().answered(200), 8u);
}

TEST(ServeHttp, ADeadlineThatPassesInTheQueueIsA504) {
  const SmallCNN model = seeded_model(13);
  GatedServer g(model, 8);
  Gate& gate = g.gate;
  ClassifyServer* server = g.server.get();
  const int port = g.port;

  const int before = gate.entered();
  Answer first, late;
  std::jthread a([&] { first = post_classify(*loopback_client(port), classify_body(test_image(0), 0)); });
  const OpenAtExit opener_a{gate};
  ASSERT_TRUE(gate.wait_entered(before + 1));
  std::jthread b([&] { late = post_classify(*loopback_client(port), classify_body(test_image(1), "late", 20.0)); });
  const OpenAtExit opener_b{gate};
  ASSERT_TRUE(eventually([&] { return server->stats().queued == 1; }));
  std::this_thread::sleep_for(60ms);  // well past its 20 ms
  gate.open();
  a.join();
  b.join();
  expect_answer_of_model(first, model, test_image(0));
  EXPECT_EQ(late.status, 504) << late.body.dump();
  EXPECT_EQ(late.body.value("id", ""), "late");
  EXPECT_NE(late.body.value("error", "").find("deadline"), std::string::npos) << late.body.dump();
  EXPECT_EQ(server->stats().expired, 1u);

  // A deadline that does not pass changes nothing.
  expect_answer_of_model(post_classify(*loopback_client(port), classify_body(test_image(2), 2, 10'000.0)), model,
                         test_image(2));
}

TEST(ServeHttp, MalformedBodiesAre400sThatSayWhatIsWrong) {
  ServerOptions options;
  options.batcher.max_batch = 1;
  ClassifyServer server(examples::classify_with(seeded_model(14)), options);
  const int port = server.start();
  const auto client = loopback_client(port);

  std::vector<float> short_image(kPixels - 1, 0.5f), image = test_image(0);
  json with_string = json{{"image", image}};
  with_string["image"][5] = "x";
  json too_bright = json{{"image", image}, {"id", "b1"}};
  too_bright["image"][7] = 2.0;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "the body is not JSON"},
      {"{\"image\": [1e400]}", "the body holds a number out of range"},
      {"[1, 2]", "the body must be a JSON object, not an array"},
      {"{}", "\"image\" is missing"},
      {json{{"image", short_image}}.dump(), "784 numbers (28 x 28, row by row), got 783 elements"},
      {json{{"image", "pixels"}}.dump(), "got a string"},
      {with_string.dump(), "\"image\"[5] is a string, not a number"},
      {too_bright.dump(), "\"image\"[7] = 2.0 is outside [0, 1]"},
      {classify_body(image, nullptr, -1.0), "\"deadline_ms\" must be a number of milliseconds"},
      {json{{"image", image}, {"deadline", 5}}.dump(), "unknown field \"deadline\""},
      {json{{"image", image}, {"id", json::object()}}.dump(), "\"id\" must be an integer or a string"},
  };
  for (const auto& [body, message] : cases) {
    const Answer a = post_classify(*client, body);
    EXPECT_EQ(a.status, 400) << body.substr(0, 80);
    EXPECT_NE(a.body.value("error", "").find(message), std::string::npos)
        << "for " << body.substr(0, 80) << ": " << a.body.dump();
  }
  // The id of a request that has a valid one comes back with its error.
  EXPECT_EQ(post_classify(*client, too_bright.dump()).body.value("id", ""), "b1");

  // Over 1 MiB, with a length or chunked: 413, whose connection then closes (a new client each).
  const httplib::Result big = client->Post("/v1/classify", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  const httplib::Result chunked = loopback_client(port)->Post(
      "/v1/classify",
      [](std::size_t offset, httplib::DataSink& sink) {
        if (offset >= (2u << 20)) return sink.done(), true;
        const std::string spaces(64 << 10, ' ');
        return sink.write(spaces.data(), spaces.size());
      },
      "application/json");
  ASSERT_TRUE(chunked);
  EXPECT_EQ(chunked->status, 413);
  // A JSON body under curl -d's form content type is still JSON (and over httplib's 8 KiB for forms).
  const std::string body = classify_body(test_image(1), 1);
  ASSERT_GT(body.size(), 8192u);
  const httplib::Result form = loopback_client(port)->Post("/v1/classify", body, "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 200) << form->body;
  const httplib::Result missing = client->Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("no such endpoint: GET /v1/nothing"), std::string::npos) << missing->body;
  EXPECT_EQ(server.stats().requests, 1u) << "a malformed body never reaches the batcher";

  const httplib::Result health = client->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const httplib::Result stats = client->Get("/v1/stats");
  ASSERT_TRUE(stats);
  const json s = json::parse(stats->body);
  EXPECT_EQ(s.at("requests"), 1);
  EXPECT_EQ(s.at("max_batch"), 1);
  EXPECT_EQ(s.at("stopping"), false);
}

TEST(ServeHttp, StopClosesTheListenerAnswersEveryAdmittedRequestAndClosesIdleConnections) {
  const SmallCNN model = seeded_model(15);
  GatedServer g(model, 8);
  Gate& gate = g.gate;
  ClassifyServer* server = g.server.get();
  const int port = g.port;

  // Three admitted: one held in its batch, two in the queue.
  std::vector<Answer> admitted(3);
  std::vector<std::jthread> senders;
  const OpenAtExit opener{gate};
  const int before = gate.entered();
  for (int id = 0; id < 3; ++id) {
    senders.emplace_back(
        [&, id] { admitted[id] = post_classify(*loopback_client(port), classify_body(test_image(id), id)); });
    if (id == 0) {
      ASSERT_TRUE(gate.wait_entered(before + 1));
    }
  }
  ASSERT_TRUE(eventually([&] { return server->stats().queued == 2; }));
  // An idle keep-alive connection (one answer behind it), and one halfway through a header.
  RawConnection idle(port), halfway(port);
  ASSERT_TRUE(idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(idle.read_answer().status, 200);
  const std::string late = classify_request(classify_body(test_image(9), 9));
  ASSERT_TRUE(halfway.send(late.substr(0, 20)));
  ASSERT_TRUE(eventually([&] { return server->stats().queued == 2; }));

  std::jthread stopper([&] { server->stop(); });
  const OpenAtExit opener_stopper{gate};
  // The listener closes at once: a new client is refused by the kernel, not left waiting.
  ASSERT_TRUE(eventually([&] { return !RawConnection(port).connected(); }));
  EXPECT_TRUE(idle.closed_by_server(std::chrono::milliseconds(5000))) << "the idle connection stayed open";
  // The request whose header was still arriving is refused, and its connection closed.
  ASSERT_TRUE(halfway.send(late.substr(20)));
  const RawAnswer refused = halfway.read_answer();
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.header("retry-after"), "1");
  EXPECT_EQ(refused.header("connection"), "close");
  EXPECT_NE(refused.body.find("shutting down"), std::string::npos) << refused.body;

  gate.open();
  stopper.join();
  for (auto& t : senders) t.join();
  for (int id = 0; id < 3; ++id) {
    EXPECT_EQ(admitted[id].body.value("id", -1), id);
    expect_answer_of_model(admitted[id], model, test_image(id));
  }
  EXPECT_EQ(post_classify(*loopback_client(port), classify_body(test_image(0), 0)).status, 0) << "still listening";
}

}  // namespace
}  // namespace kiln::test
