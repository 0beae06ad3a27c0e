// examples/serve: an HTTP classification service for the Fashion-MNIST model. A ClassifyServer
// owns a serve::Batcher, which gathers requests into batched forward passes, and a
// serve::HttpServer (event-driven: a few I/O threads for every connection) that hands each
// request to the batcher with a completion, so no thread waits on one. It listens, warms the
// model up, then reports ready; it stops by draining (serve/http_server.h says what that means).
//
//   POST /v1/classify  {"image": [784 pixels in 0..1, row by row], "deadline_ms": 50, "id": "a1"}
//                      (deadline_ms and id are optional; the id is echoed back)
//       200  {"id": "a1", "class": 7, "label": "Sneaker", "scores": [10 logits]}
//       400  malformed body or request; 404/405 no such endpoint; 408 the header came too slowly;
//            413 body over 1 MiB; 414 target too long; 431 header fields too large
//       503 + Retry-After: past capacity (queue full, or the request waited over
//            max_queue_delay), warming up, or stopping; 504: the request's own deadline passed
//            before its batch ran. Errors: {"id": .., "error": ".."}
//   GET /healthz       200 "ok" while the process serves; 503 while stopping
//   GET /readyz        200 "ready" once warmed up; 503 before, and while stopping
//   GET /metrics       Prometheus text: answers by status, latency histogram, queue depth, batch sizes
//   GET /v1/stats      the batcher's counters as JSON
#pragma once
#include <kiln/serve.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "examples/fashion_mnist_model.h"

namespace kiln::examples {

struct ServerOptions {
  // A queue of two batches: past it (and one batch running) requests get 503 at once, so that an
  // accepted request waits behind at most three forward passes, not seconds of backlog.
  serve::BatcherOptions batcher{.max_batch = 32, .max_wait = std::chrono::microseconds(200), .max_queue = 64};
  std::vector<std::size_t> warm_up_sizes{};  // batch sizes run before ready; empty: 1..max_batch
  // The HTTP side: I/O threads, deadlines, connection cap, drain deadline. Its max_in_flight
  // left at 0 becomes the batcher's capacity (max_queue + max_batch per worker).
  serve::HttpServerOptions http{};
  // A request that waited longer in the queue is answered 503 (past capacity) instead of late.
  std::chrono::milliseconds max_queue_delay{500};
};

// What the server runs for a batch of raw images: [B, 1, 28, 28] pixels in [0, 1] -> [B, 10]
// logits, normalised first as the training normalised. The model is put in eval mode.
serve::BatchFunction classify_with(SmallCNN model);

class ClassifyServer {
 public:
  // `classify`: as classify_with's function ([B, 1, 28, 28] -> [B, 10]).
  explicit ClassifyServer(serve::BatchFunction classify, ServerOptions options = {});
  ~ClassifyServer();  // stop()
  ClassifyServer(const ClassifyServer&) = delete;
  ClassifyServer& operator=(const ClassifyServer&) = delete;

  // listen(), then warm_up(): returns the port once the server is ready.
  int start(const std::string& host = "127.0.0.1", int port = 0);
  // Binds host:port (0: any free port) and serves: health and metrics at once, classification
  // (503 "warming up") only after warm_up(). Throws kiln::Error if it cannot listen there (the
  // port in use by another server, say). Returns the port.
  int listen(const std::string& host = "127.0.0.1", int port = 0);
  // Runs the model once for every batch size it will see, then reports ready.
  void warm_up();

  // Drains (serve::HttpServer::drain: listener closed at once, every admitted request answered,
  // at most http.drain_timeout), then stops the batcher. Safe to call more than once.
  void stop();

  serve::BatcherStats stats() const;
  const serve::HttpMetrics& http_metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::examples
