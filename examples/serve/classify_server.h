// examples/serve: an HTTP classification service for the Fashion-MNIST model. A ClassifyServer
// owns a serve::Batcher, which gathers the requests of many HTTP threads into batched forward
// passes, and the HTTP server that answers them. It starts on a port and stops by draining: new
// requests are refused (503), every request already admitted is answered, then it closes.
//
//   POST /v1/classify  {"image": [784 pixels in 0..1, row by row], "deadline_ms": 50, "id": "a1"}
//                      (deadline_ms and id are optional; the id is echoed back)
//       200  {"id": "a1", "class": 7, "label": "Sneaker", "scores": [10 logits]}
//       400  malformed body; 503 + Retry-After: queue full or stopping; 504: the deadline passed
//            before the request's batch ran; 500: any other failure. Errors: {"id": .., "error": ".."}
//   GET /healthz       200 "ok"; 503 while stopping
//   GET /v1/stats      the batcher's counters as JSON
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "examples/fashion_mnist_model.h"
#include <kiln/serve.h>

namespace kiln::examples {

struct ServerOptions {
  serve::BatcherOptions batcher{.max_batch = 32, .max_wait = std::chrono::microseconds(200), .max_queue = 256};
  std::vector<std::size_t> warm_up_sizes{};  // batch sizes run before listening; empty: 1..max_batch
  std::size_t http_threads = 32;             // connections served at once (a keep-alive one holds a thread)
  std::chrono::seconds retry_after{1};       // a 503's advice to the client
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

  // Warms the model up (every batch size it will run), binds host:port (0: any free port) and
  // serves from threads of its own. Returns the port. Throws kiln::Error if it cannot bind.
  int start(const std::string& host = "127.0.0.1", int port = 0);

  // Drains: refuses new requests with 503, waits until every admitted request is answered,
  // then stops listening and joins the server's threads. Safe to call more than once; not from
  // a request handler.
  void stop();

  serve::BatcherStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::examples
