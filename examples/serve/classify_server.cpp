#include "examples/serve/classify_server.h"

#include <kiln/core.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

#include "examples/serve/classify_api.h"

namespace kiln::examples {

namespace {

constexpr const char* kJson = "application/json";
const Shape kItemShape{1, kFashionMnistSide, kFashionMnistSide};

serve::HttpResponse json_answer(int status, std::string body) {
  serve::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

serve::HttpResponse text_answer(int status, std::string body, bool close = false) {
  serve::HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(body);
  r.close = close;
  return r;
}

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
  // After the batcher: destroyed first, so that no answer reaches a batcher that is gone.
  std::unique_ptr<serve::HttpServer> http;
  std::atomic<bool> ready{false};
  std::mutex stop_mutex;
  bool stopped = false;

  Impl(serve::BatchFunction classify, ServerOptions o)
      : options(std::move(o)), batcher(std::move(classify), kItemShape, options.batcher) {
    serve::HttpServerOptions http_options = options.http;
    if (http_options.max_in_flight == 0)
      http_options.max_in_flight = options.batcher.max_queue + options.batcher.max_batch * options.batcher.workers;
    http_options.error_body = [](const std::string& message) { return error_answer({}, message); };
    http = std::make_unique<serve::HttpServer>(std::move(http_options));
    http->set_admission([this]() -> std::string {
      if (!ready) return "the model is warming up";
      if (batcher.queued() >= options.batcher.max_queue)
        return "the queue is full (" + std::to_string(options.batcher.max_queue) + " requests waiting)";
      return {};
    });
    http->route(
        "POST", "/v1/classify",
        [this](serve::HttpRequest&& req, serve::Respond respond) { this->classify(std::move(req), respond); }, true);
    http->route("GET", "/healthz", [this](serve::HttpRequest&&, serve::Respond respond) {
      const bool stopping = http->draining();
      respond(text_answer(stopping ? 503 : 200, stopping ? "stopping\n" : "ok\n", stopping));
    });
    http->route("GET", "/readyz", [this](serve::HttpRequest&&, serve::Respond respond) {
      const bool stopping = http->draining();
      respond(stopping ? text_answer(503, "stopping\n", true)
              : ready  ? text_answer(200, "ready\n")
                       : text_answer(503, "warming up\n"));
    });
    http->route("GET", "/metrics", [this](serve::HttpRequest&&, serve::Respond respond) {
      std::string text = http->metrics().prometheus_text(http->open_connections(), http->in_flight());
      text += serve::batcher_prometheus_text(batcher.stats());
      text += "# HELP kiln_ready 1 once the model is warmed up and the server not stopping.\n# TYPE kiln_ready gauge\n";
      text += std::string("kiln_ready ") + (ready && !http->draining() ? "1" : "0") + "\n";
      serve::HttpResponse r = text_answer(200, std::move(text));
      r.content_type = "text/plain; version=0.0.4";
      respond(std::move(r));
    });
    http->route("GET", "/v1/stats", [this](serve::HttpRequest&&, serve::Respond respond) {
      const serve::BatcherStats s = batcher.stats();
      const nlohmann::json out = {{"requests", s.requests},
                                  {"completed", s.completed},
                                  {"rejected_full", s.rejected_full},
                                  {"expired", s.expired},
                                  {"failed", s.failed},
                                  {"batches", s.batches},
                                  {"mean_batch", s.mean_batch()},
                                  {"queued", s.queued},
                                  {"ready", ready.load()},
                                  {"stopping", http->draining()},
                                  {"max_batch", options.batcher.max_batch},
                                  {"max_queue", options.batcher.max_queue}};
      respond(json_answer(200, out.dump()));
    });
  }

  serve::HttpResponse busy(const std::string& id_json, const std::string& why) const {
    serve::HttpResponse r = json_answer(503, error_answer(id_json, why));
    r.headers.emplace_back("Retry-After", std::to_string(options.http.retry_after.count()));
    return r;
  }

  // Runs on an I/O thread: parses, then hands the image to the batcher; the answer is written
  // from the batcher's completion.
  void classify(serve::HttpRequest&& req, const serve::Respond& respond) {
    ClassifyRequest r;
    try {
      r = parse_classify_request(req.body);
    } catch (const BadRequest& e) {
      return respond(json_answer(400, error_answer(e.id_json(), e.what())));
    }
    // The service's own bound on queueing (past it: 503, capacity) and the client's deadline
    // (past it: 504); the batcher drops a request at the earlier of the two.
    const serve::Clock::time_point capacity_deadline = req.received + options.max_queue_delay;
    std::optional<serve::Clock::time_point> client_deadline;
    if (r.deadline) client_deadline = req.received + *r.deadline;
    const bool client_first = client_deadline && *client_deadline <= capacity_deadline;
    const serve::Clock::time_point deadline = client_first ? *client_deadline : capacity_deadline;
    try {
      batcher.submit(
          std::move(r.image),
          [this, respond, id = r.id_json, client_first](std::vector<float> scores, std::exception_ptr error) {
            if (!error) return respond(json_answer(200, classify_answer(id, scores)));
            try {
              std::rethrow_exception(error);
            } catch (const serve::DeadlineExceeded& e) {
              if (client_first) return respond(json_answer(504, error_answer(id, e.what())));
              respond(busy(id, "the request waited over " + std::to_string(options.max_queue_delay.count()) +
                                   " ms in the queue (the server is past capacity)"));
            } catch (const std::exception& e) {
              respond(json_answer(500, error_answer(id, e.what())));
            }
          },
          deadline);
    } catch (const serve::QueueFull& e) {
      respond(busy(r.id_json, e.what()));
    } catch (const serve::ShuttingDown& e) {
      serve::HttpResponse b = busy(r.id_json, e.what());
      b.close = true;
      respond(std::move(b));
    }
  }
};

ClassifyServer::ClassifyServer(serve::BatchFunction classify, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(classify), std::move(options))) {}

ClassifyServer::~ClassifyServer() { stop(); }

int ClassifyServer::start(const std::string& host, int port) {
  const int bound = listen(host, port);
  warm_up();
  return bound;
}

int ClassifyServer::listen(const std::string& host, int port) { return impl_->http->start(host, port); }

void ClassifyServer::warm_up() {
  impl_->batcher.warm_up(impl_->options.warm_up_sizes);
  impl_->ready = true;
}

void ClassifyServer::stop() {
  Impl& s = *impl_;
  const std::lock_guard once(s.stop_mutex);
  if (s.stopped) return;
  s.stopped = true;
  s.http->drain();
  s.batcher.shutdown();
}

serve::BatcherStats ClassifyServer::stats() const { return impl_->batcher.stats(); }
const serve::HttpMetrics& ClassifyServer::http_metrics() const { return impl_->http->metrics(); }

}  // namespace kiln::examples
