// serve_http (shared/WORKLOADS.md): examples/serve's HTTP service, started in-process on a fresh
// SmallCNN with its default options, under 64 keep-alive loopback connections sending back to
// back (bench/http_load.h: one epoll thread), beside the same model through serve::Batcher
// in-process with the same options and 64 client threads — the figure the HTTP layer is
// measured against. Each iteration measures both, one after the other, so that their ratio
// compares like with like on a noisy machine; then an open-loop run at half the HTTP rate gives
// the latency below saturation.
// Counters: requests_per_s, p50_us, p99_us (HTTP, closed loop); in_process_requests_per_s,
// in_process_p99_us; http_over_in_process (the ratio); paced_rate, paced_p50_us, paced_p99_us
// (open loop at half the HTTP rate, latency from each request's scheduled time, counting the
// requests still in flight when its window closes); in_process_paced_p99_us (the probe: the
// same open loop into serve::Batcher in-process, no HTTP, no load client); third_rate and
// third_p99_us (the HTTP open loop at a third of the saturated rate); mean_batch
// (rows per forward pass over the whole run), paced_mean_batch (over the open-loop runs only).
#ifdef KILN_BENCH_SERVE
#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.h"
#include "bench/http_load.h"
#include "examples/serve/classify_server.h"

namespace kiln::bench {
namespace {

constexpr int kHttpConnections = 64;
constexpr auto kHttpWindow = std::chrono::seconds(2);

std::vector<std::vector<float>> http_request_images(int n) {
  std::mt19937 rng(5);
  std::vector<std::vector<float>> images;
  for (int i = 0; i < n; ++i) {
    std::vector<float> image(784);
    for (float& p : image) p = static_cast<float>(rng() % 256) / 255.0f;
    images.push_back(std::move(image));
  }
  return images;
}

struct InProcess {
  double requests_per_s = 0, p99_us = 0;
};

// 64 threads, each submitting one image at a time and waiting for its answer.
InProcess batcher_in_process(serve::Batcher& batcher, const std::vector<std::vector<float>>& images) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<double>> per_thread(kHttpConnections);
  const auto start = Clock::now();
  const auto until = start + kHttpWindow;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kHttpConnections; ++t)
      threads.emplace_back([&, t] {
        for (std::size_t i = t; Clock::now() < until; ++i) {
          const auto sent = Clock::now();
          benchmark::DoNotOptimize(batcher.submit(images[i % images.size()]).get());
          per_thread[t].push_back(std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
        }
      });
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : per_thread) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  return {static_cast<double>(all.size()) / seconds, all.empty() ? 0.0 : all[all.size() * 99 / 100]};
}

// Open loop in-process: one thread submits at begin + k / rate, each answer delivered by
// callback; latency from each request's scheduled time, as the HTTP open loop counts it. The
// probe of what the model and batcher give at that rate with no HTTP and no load client.
// `failed` counts the requests answered with an error (the run is then reported as failed).
double batcher_paced_p99_us(serve::Batcher& batcher, const std::vector<std::vector<float>>& images, double rate,
                            std::size_t& failed) {
  using Clock = std::chrono::steady_clock;
  const auto gap = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / rate));
  const auto begin = Clock::now();
  const auto count = static_cast<std::size_t>(rate * std::chrono::duration<double>(kHttpWindow).count());
  std::vector<double> latency_us(count, -1.0);
  std::atomic<std::size_t> answered{0}, errors{0};
  for (std::size_t k = 0; k < count; ++k) {
    const auto scheduled = begin + static_cast<long>(k) * gap;
    std::this_thread::sleep_until(scheduled);
    batcher.submit(images[k % images.size()], [&, k, scheduled](std::vector<float>, std::exception_ptr error) {
      latency_us[k] = std::chrono::duration<double, std::micro>(Clock::now() - scheduled).count();
      if (error) errors.fetch_add(1, std::memory_order_relaxed);
      answered.fetch_add(1, std::memory_order_release);
    });
  }
  while (answered.load(std::memory_order_acquire) < count) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  failed += errors.load();
  std::sort(latency_us.begin(), latency_us.end());
  return latency_us.empty() ? 0.0 : latency_us[latency_us.size() * 99 / 100];
}

void serve_http(benchmark::State& state) {
  manual_seed(1);
  const SmallCNN model;
  const examples::ServerOptions options;
  examples::ClassifyServer server(examples::classify_with(model), options);
  const int port = server.start();
  serve::Batcher in_process(examples::classify_with(model), Shape{1, 28, 28}, options.batcher);
  in_process.warm_up();

  const std::vector<std::vector<float>> images = http_request_images(64);
  std::vector<std::string> requests;
  for (std::size_t i = 0; i < images.size(); ++i)
    requests.push_back(http_post("/v1/classify", nlohmann::json{{"image", images[i]}, {"id", i}}.dump()));

  double http_rate = 0, p50 = 0, p99 = 0, local_rate = 0, local_p99 = 0, paced_rate = 0, paced_p50 = 0, paced_p99 = 0;
  double paced_rows = 0, paced_batches = 0, local_paced_p99 = 0, third_rate = 0, third_p99 = 0;
  std::size_t non_200 = 0;
  int n = 0;
  const serve::BatcherStats before = server.stats();
  for (auto _ : state) {
    const InProcess local = batcher_in_process(in_process, images);
    HttpLoadResult closed = run_http_load(port, kHttpConnections, requests, kHttpWindow);
    const double rate = closed.requests_per_s();
    // The closed loop leaves up to 64 requests in the server: let it answer them before the
    // open loop starts, or their queue counts against the latency below saturation.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const serve::BatcherStats paced_before = server.stats();
    HttpLoadResult paced = run_http_load(port, kHttpConnections, requests, kHttpWindow, rate / 2);
    const serve::BatcherStats paced_after = server.stats();
    local_paced_p99 += batcher_paced_p99_us(in_process, images, rate / 2, non_200);
    // Lower on the latency-against-load curve: a third of the saturated rate.
    HttpLoadResult third = run_http_load(port, kHttpConnections, requests, kHttpWindow, rate / 3);
    for (const auto& [status, count] : third.by_status) non_200 += status == 200 ? 0 : count;
    non_200 += third.unanswered;
    third_rate += third.requests_per_s();
    third_p99 += third.percentile(0.99);
    paced_rows += static_cast<double>(paced_after.completed - paced_before.completed);
    paced_batches += static_cast<double>(paced_after.batches - paced_before.batches);
    for (const auto& [status, count] : closed.by_status) non_200 += status == 200 ? 0 : count;
    for (const auto& [status, count] : paced.by_status) non_200 += status == 200 ? 0 : count;
    non_200 += paced.unanswered;
    local_rate += local.requests_per_s;
    local_p99 += local.p99_us;
    http_rate += rate;
    p50 += closed.percentile(0.50);
    p99 += closed.percentile(0.99);
    paced_rate += paced.requests_per_s();
    paced_p50 += paced.percentile(0.50);
    paced_p99 += paced.percentile(0.99);
    ++n;
  }
  const serve::BatcherStats after = server.stats();
  server.stop();
  if (non_200 > 0) {
    state.SkipWithError(
        (std::to_string(non_200) + " requests were not answered with 200 (or not at all, or failed in-process)")
            .c_str());
    return;
  }
  state.counters["requests_per_s"] = http_rate / n;
  state.counters["p50_us"] = p50 / n;
  state.counters["p99_us"] = p99 / n;
  state.counters["in_process_requests_per_s"] = local_rate / n;
  state.counters["in_process_p99_us"] = local_p99 / n;
  state.counters["http_over_in_process"] = http_rate / local_rate;
  state.counters["paced_rate"] = paced_rate / n;
  state.counters["paced_p50_us"] = paced_p50 / n;
  state.counters["paced_p99_us"] = paced_p99 / n;
  state.counters["in_process_paced_p99_us"] = local_paced_p99 / n;
  state.counters["third_rate"] = third_rate / n;
  state.counters["third_p99_us"] = third_p99 / n;
  state.counters["paced_mean_batch"] = paced_batches > 0 ? paced_rows / paced_batches : 0.0;
  const double batches = static_cast<double>(after.batches - before.batches);
  state.counters["mean_batch"] = batches > 0 ? static_cast<double>(after.completed - before.completed) / batches : 0.0;
}

}  // namespace

// The service runs its model on the CPU: registered for --device=cpu only.
void register_serve_http(Device device) {
  if (device != Device::cpu()) return;
  // Each repetition starts a server (warm-up untimed) and times one iteration: 2 s in-process,
  // 2 s over HTTP closed loop, 2 s paced, 2 s paced in-process, 2 s paced at a third.
  apply(benchmark::RegisterBenchmark("serve_http", serve_http), {.repetitions = 3, .iterations = 1});
}

}  // namespace kiln::bench
#endif  // KILN_BENCH_SERVE
