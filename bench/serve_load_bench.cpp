// serve_load (shared/WORKLOADS.md): examples/serve's HTTP service, started in-process on a fresh
// SmallCNN with its default options, under a bounded loopback load: 8 keep-alive connections,
// one client thread each, send classification requests back to back for one second per
// iteration. Counters: requests_per_s, p50_us and p99_us (client-side latency of the
// iteration's requests), mean_batch (rows per forward pass). Clients and server share the
// machine's cores, as on any one-host load test; the clients run on one epoll thread
// (bench/http_load.h).
#ifdef KILN_BENCH_SERVE

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "bench/http_load.h"
#include "examples/serve/classify_server.h"

namespace kiln::bench {
namespace {

constexpr int kConnections = 8;
constexpr auto kWindow = std::chrono::seconds(1);

std::vector<std::string> request_bodies(int n) {
  std::mt19937 rng(5);
  std::vector<std::string> bodies;
  for (int i = 0; i < n; ++i) {
    std::vector<float> image(784);
    for (float& p : image) p = static_cast<float>(rng() % 256) / 255.0f;
    bodies.push_back(nlohmann::json{{"image", image}, {"id", i}}.dump());
  }
  return bodies;
}

double percentile(std::vector<double>& sorted, double p) {
  return sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(p * sorted.size()))];
}

void serve_load(benchmark::State& state) {
  manual_seed(1);
  examples::ClassifyServer server(examples::classify_with(SmallCNN{}));
  const int port = server.start();
  const std::vector<std::string> bodies = request_bodies(64);

  std::vector<std::string> requests;
  for (const std::string& body : bodies) requests.push_back(http_post("/v1/classify", body));
  std::vector<double> latencies_us;
  std::size_t failures = 0;
  const serve::BatcherStats before = server.stats();
  double seconds = 0;
  for (auto _ : state) {
    const HttpLoadResult r = run_http_load(port, kConnections, requests, kWindow);
    seconds += r.seconds;
    latencies_us.insert(latencies_us.end(), r.latencies_us.begin(), r.latencies_us.end());
    for (const auto& [status, count] : r.by_status) failures += status == 200 ? 0 : count;
  }
  const serve::BatcherStats after = server.stats();
  server.stop();
  if (failures > 0) {
    state.SkipWithError((std::to_string(failures) + " requests were not answered with 200").c_str());
    return;
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  state.counters["requests_per_s"] = static_cast<double>(latencies_us.size()) / seconds;
  state.counters["p50_us"] = percentile(latencies_us, 0.50);
  state.counters["p99_us"] = percentile(latencies_us, 0.99);
  const double batches = static_cast<double>(after.batches - before.batches);
  state.counters["mean_batch"] = batches > 0 ? static_cast<double>(after.completed - before.completed) / batches : 0.0;
}

}  // namespace

// The service runs its model on the CPU: registered for --device=cpu only.
void register_serve_load(Device device) {
  if (device != Device::cpu()) return;
  // Each repetition starts a server (warm-up untimed) and times one window of load.
  apply(benchmark::RegisterBenchmark("serve_load", serve_load), {.repetitions = 3, .iterations = 1});
}

}  // namespace kiln::bench
#endif  // KILN_BENCH_SERVE
