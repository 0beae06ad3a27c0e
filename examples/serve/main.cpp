// serve: the Fashion-MNIST classifier over HTTP (the API is in classify_server.h and the README's
// "Serving over HTTP" section).
//
//   ./build/examples/serve/serve --model runs/fashion_mnist/model.safetensors [--host 127.0.0.1]
//       [--port 8080] [--max-batch 32] [--max-wait-us 200] [--max-queue 64] [--io-threads 2]
//       [--max-connections 1024] [--max-queue-delay-ms 500] [--header-timeout-ms 5000]
//       [--body-timeout-ms 5000] [--idle-timeout-ms 30000] [--drain-timeout-ms 10000]
//
// Without --model it serves a freshly initialised (untrained) model, and says so. A port in use
// is an error (exit 1). SIGTERM or SIGINT: close the listener, answer every request accepted,
// exit 0 within the drain deadline.
#include <kiln/io.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "examples/serve/classify_server.h"
#include "examples/serve/stop_signal.h"

using namespace kiln;

namespace {

struct Args {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  examples::ServerOptions server;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("serve", arg + " needs a value");
      return argv[++i];
    };
    auto count = [&](long long min) {
      const std::string text = value();
      std::size_t used = 0;
      long long n = -1;
      try {
        n = std::stoll(text, &used);
      } catch (const std::exception&) {
      }
      if (used != text.size() || n < min)
        throw Error("serve", arg + " takes a whole number >= " + std::to_string(min) + ", got " + text);
      return n;
    };
    if (arg == "--model")
      a.model = value();
    else if (arg == "--host")
      a.host = value();
    else if (arg == "--port")
      a.port = static_cast<int>(count(0));
    else if (arg == "--max-batch")
      a.server.batcher.max_batch = static_cast<std::size_t>(count(1));
    else if (arg == "--max-wait-us")
      a.server.batcher.max_wait = std::chrono::microseconds(count(0));
    else if (arg == "--max-queue")
      a.server.batcher.max_queue = static_cast<std::size_t>(count(1));
    else if (arg == "--io-threads")
      a.server.http.io_threads = static_cast<std::size_t>(count(1));
    else if (arg == "--max-connections")
      a.server.http.max_connections = static_cast<std::size_t>(count(1));
    else if (arg == "--max-queue-delay-ms")
      a.server.max_queue_delay = std::chrono::milliseconds(count(1));
    else if (arg == "--header-timeout-ms")
      a.server.http.header_timeout = std::chrono::milliseconds(count(1));
    else if (arg == "--body-timeout-ms")
      a.server.http.body_timeout = std::chrono::milliseconds(count(1));
    else if (arg == "--idle-timeout-ms")
      a.server.http.idle_timeout = std::chrono::milliseconds(count(1));
    else if (arg == "--drain-timeout-ms")
      a.server.http.drain_timeout = std::chrono::milliseconds(count(1));
    else
      throw Error("serve", "unknown argument " + arg + " (see the comment at the top of examples/serve/main.cpp)");
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  // Installed first, so that a signal during the warm-up is not lost: it stops the server at once.
  examples::StopSignal stop_signal;

  SmallCNN model;
  if (args.model.empty()) {
    std::printf("serve: no --model given: serving a freshly initialised SmallCNN (untrained; its answers are noise)\n");
  } else {
    io::load_model(model, args.model);
    std::printf("serve: model %s\n", args.model.c_str());
  }
  examples::ClassifyServer server(examples::classify_with(std::move(model)), args.server);
  // Listening first: /healthz answers while the model warms up, /readyz once it is warm.
  const int port = server.listen(args.host, args.port);
  std::printf("serve: listening on http://%s:%d (POST /v1/classify, GET /healthz /readyz /metrics /v1/stats)\n",
              args.host.c_str(), port);
  std::printf("serve: warming up batch sizes 1..%zu\n", args.server.batcher.max_batch);
  std::fflush(stdout);
  server.warm_up();
  std::printf("serve: ready\n");
  std::fflush(stdout);

  const int sig = stop_signal.wait();
  std::printf("serve: %s: listener closed; answering the requests accepted, then exiting\n",
              sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  server.stop();
  const serve::BatcherStats s = server.stats();
  std::printf(
      "serve: stopped after %llu answers in %llu batches (mean batch %.1f); %llu refused (queue full), %llu past their "
      "deadline\n",
      static_cast<unsigned long long>(s.completed), static_cast<unsigned long long>(s.batches), s.mean_batch(),
      static_cast<unsigned long long>(s.rejected_full), static_cast<unsigned long long>(s.expired));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "serve: %s\n", e.what());
  return 1;
}
