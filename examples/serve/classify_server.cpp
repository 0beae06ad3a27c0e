#include "examples/serve/classify_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include <kiln/core.h>
#include "examples/serve/classify_api.h"

namespace kiln::examples {

namespace {

constexpr const char* kJson = "application/json";
constexpr std::size_t kMaxBody = 1 << 20;  // 784 pixels take ~16 KB of JSON; more is not a request
const Shape kItemShape{1, kFashionMnistSide, kFashionMnistSide};

// httplib 0.11 listens with a backlog of 5 connections: a burst of new clients overflows it, and
// the kernel drops their SYNs, which the clients send again only a second later. listen() once
// more on the bound socket widens the backlog.
class HttpServer : public httplib::Server {
 public:
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }
};

}  // namespace

serve::BatchFunction classify_with(SmallCNN model) {
  model.eval();  // batch norm on its running statistics: rows independent of their batch
  return [model = std::move(model)](const Tensor& pixels) {
    const NoGradGuard no_grad;  // the batcher's thread records no graph
    return model((pixels - kFashionMnistMean) / kFashionMnistStd);
  };
}

struct ClassifyServer::Impl {
  ServerOptions options;
  serve::Batcher batcher;
  HttpServer http;
  std::thread listener;
  std::atomic<bool> listener_done{false};

  // Admission: a request counts as in flight from the moment it is admitted; stop() refuses new
  // ones, then waits for the count to reach zero before it shuts anything down.
  std::mutex mutex;
  std::condition_variable idle;
  std::size_t in_flight = 0;
  bool stopping = false;

  std::mutex stop_mutex;
  bool stopped = false;

  Impl(serve::BatchFunction classify, ServerOptions o)
      : options(std::move(o)), batcher(std::move(classify), kItemShape, options.batcher) {
    configure();
  }

  bool admit() {
    const std::lock_guard lock(mutex);
    if (stopping) return false;
    ++in_flight;
    return true;
  }
  void leave() {
    const std::lock_guard lock(mutex);
    if (--in_flight == 0 && stopping) idle.notify_all();
  }

  void configure();
  void receive(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read);
  void classify(const std::string& body, httplib::Response& res);
  void busy(httplib::Response& res, const std::string& id_json, const std::string& why, bool close) const;
};

void ClassifyServer::Impl::busy(httplib::Response& res, const std::string& id_json, const std::string& why,
                                bool close) const {
  res.status = 503;
  res.set_header("Retry-After", std::to_string(options.retry_after.count()));
  // While stopping, the client should come back on a new connection (to another instance).
  if (close) res.set_header("Connection", "close");
  res.set_content(error_answer(id_json, why), kJson);
}

// The body is read here rather than by httplib, which refuses a form-encoded body over 8 KiB
// with 413: curl -d sends JSON under that content type, and an image takes ~16 KB.
void ClassifyServer::Impl::receive(const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& read) {
  if (req.is_multipart_form_data()) {
    res.status = 400;
    res.set_header("Connection", "close");  // its body was not read
    return res.set_content(error_answer({}, "send the JSON as the body, not as a multipart form"), kJson);
  }
  std::string body;
  std::size_t received = 0;
  const bool whole = read([&](const char* data, std::size_t n) {
    received += n;
    if (received <= kMaxBody) body.append(data, n);
    // Past the limit the rest is read and dropped rather than left unread, which would reset the
    // connection under a client still sending and lose its 413 (httplib bounds a Content-Length,
    // not a chunked body).
    return true;
  });
  if (!whole || received > kMaxBody) {
    const bool too_big = res.status == 413 || received > kMaxBody;
    res.status = too_big ? 413 : 400;
    res.set_header("Connection", "close");
    return res.set_content(error_answer({}, too_big ? "the body is larger than 1 MiB" : "the body could not be read"),
                           kJson);
  }
  classify(body, res);
}

void ClassifyServer::Impl::classify(const std::string& body, httplib::Response& res) {
  const serve::Clock::time_point received = serve::Clock::now();
  if (!admit()) return busy(res, {}, "the server is shutting down", true);
  struct Leave {
    Impl& s;
    ~Leave() { s.leave(); }
  } const leave{*this};

  ClassifyRequest r;
  try {
    r = parse_classify_request(body);
  } catch (const BadRequest& e) {
    res.status = 400;
    return res.set_content(error_answer(e.id_json(), e.what()), kJson);
  }
  std::optional<serve::Clock::time_point> deadline;
  if (r.deadline) deadline = received + *r.deadline;
  try {
    const std::vector<float> scores = batcher.submit(std::move(r.image), deadline).get();
    res.set_content(classify_answer(r.id_json, scores), kJson);
  } catch (const serve::QueueFull& e) {
    busy(res, r.id_json, e.what(), false);
  } catch (const serve::ShuttingDown& e) {
    busy(res, r.id_json, e.what(), true);
  } catch (const serve::DeadlineExceeded& e) {
    res.status = 504;
    res.set_content(error_answer(r.id_json, e.what()), kJson);
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(error_answer(r.id_json, e.what()), kJson);
  }
}

void ClassifyServer::Impl::configure() {
  http.new_task_queue = [n = options.http_threads] { return new httplib::ThreadPool(n); };
  // Small requests and answers: without TCP_NODELAY an answer's second write waits for the
  // client's delayed ACK (tens of milliseconds).
  http.set_tcp_nodelay(true);
  http.set_keep_alive_max_count(100'000);
  http.set_keep_alive_timeout(2);  // an idle connection holds a thread, and stop() waits for it
  http.set_payload_max_length(kMaxBody);

  http.Post("/v1/classify", [this](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& read) { receive(req, res, read); });
  http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    const std::lock_guard lock(mutex);
    if (stopping) res.set_header("Connection", "close");  // every connection ends while stopping
    res.status = stopping ? 503 : 200;
    res.set_content(stopping ? "stopping\n" : "ok\n", "text/plain");
  });
  http.Get("/v1/stats", [this](const httplib::Request&, httplib::Response& res) {
    const serve::BatcherStats s = batcher.stats();
    bool is_stopping = false;
    {
      const std::lock_guard lock(mutex);
      is_stopping = stopping;
    }
    const nlohmann::json out = {{"requests", s.requests},
                                {"completed", s.completed},
                                {"rejected_full", s.rejected_full},
                                {"expired", s.expired},
                                {"failed", s.failed},
                                {"batches", s.batches},
                                {"mean_batch", s.mean_batch()},
                                {"queued", s.queued},
                                {"stopping", is_stopping},
                                {"max_batch", options.batcher.max_batch},
                                {"max_queue", options.batcher.max_queue}};
    res.set_content(out.dump(), kJson);
  });
  // httplib's own errors (404, 405, 413) come without a body: give them one in the API's form.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what =
        res.status == 413 ? "the body is larger than 1 MiB" : "no such endpoint: " + req.method + " " + req.path;
    res.set_content(error_answer({}, what), kJson);
  });
}

ClassifyServer::ClassifyServer(serve::BatchFunction classify, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(classify), std::move(options))) {}

ClassifyServer::~ClassifyServer() { stop(); }

int ClassifyServer::start(const std::string& host, int port) {
  Impl& s = *impl_;
  KILN_CHECK(!s.listener.joinable() && !s.stopped, "examples::ClassifyServer::start", "the server was already started");
  s.batcher.warm_up(s.options.warm_up_sizes);
  const int bound = port == 0 ? s.http.bind_to_any_port(host) : (s.http.bind_to_port(host, port) ? port : -1);
  KILN_CHECK(bound > 0, "examples::ClassifyServer::start",
             "cannot listen on " + host + ":" + std::to_string(port) + " (in use, or not an address of this machine)");
  s.http.widen_backlog();
  s.listener = std::thread([&s] {
    s.http.listen_after_bind();
    s.listener_done = true;
  });
  // stop() can only end a server that runs: wait until it does.
  while (!s.http.is_running() && !s.listener_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return bound;
}

void ClassifyServer::stop() {
  Impl& s = *impl_;
  const std::lock_guard once(s.stop_mutex);
  if (s.stopped) return;
  s.stopped = true;
  {
    std::unique_lock lock(s.mutex);
    s.stopping = true;
    s.idle.wait(lock, [&] { return s.in_flight == 0; });
  }
  s.batcher.shutdown();
  if (s.listener.joinable()) {
    s.http.stop();
    s.listener.join();  // after the threads that still answer on their connections
  }
}

serve::BatcherStats ClassifyServer::stats() const { return impl_->batcher.stats(); }

}  // namespace kiln::examples
