// Serving workloads (shared/WORKLOADS.md): mlp_infer_b1, one request of the MLP 784-512-512-10
// (ReLU, batch 1, weights in memory) from a host vector to a host vector, p50 and p99 latency;
// concurrent_infer, 8 client threads sending such requests back to back, requests per second and
// p99. Variants: "/module" is the same MLP as an nn module (mlp_infer_b1); "/recorded" and
// "/module_recorded" either one as a RecordedPass, a request's forward pass one message;
// "/apart" the raw-ops MLP's requests 300 us apart, the client asleep between them
// (mlp_infer_b1); "/batcher" sends the eight clients' requests through serve::Batcher, which runs
// them as batched forward passes.
// The twins are in torch_twin.py and bench/ort/ (ONNX Runtime's C API).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "kiln/autograd/autograd.h"
#include "bench/bench_common.h"
#include "bench/serving_mlp.h"
#include "kiln/nn/nn.h"
#include "kiln/serve/serve.h"

namespace kiln::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kClients = 8;

// Records each request's latency; the percentiles become the contract's counters.
class Latencies {
 public:
  void add(Clock::duration d) { us_.push_back(std::chrono::duration<double, std::micro>(d).count()); }
  void merge(const Latencies& other) { us_.insert(us_.end(), other.us_.begin(), other.us_.end()); }
  double percentile(double p) {
    if (us_.empty()) return 0.0;
    std::sort(us_.begin(), us_.end());
    return us_[std::min(us_.size() - 1, static_cast<std::size_t>(p * static_cast<double>(us_.size())))];
  }
  std::size_t count() const { return us_.size(); }

 private:
  std::vector<double> us_;
};

// One request as a service handles it: host input in, host output out.
template <class Model> std::vector<float> infer(const Model& model, const std::vector<float>& input, Device d) {
  return model(from_vector(input, {1, 784}, d)).template to_vector<float>().get();
}

// `gap`: the client sleeps that long after each request (outside its latency), as a service
// waiting on its network does between requests.
template <class Model>
void one_client(benchmark::State& state, Device d, const Model& model,
                std::chrono::microseconds gap = std::chrono::microseconds(0)) {
  const NoGradGuard no_grad;  // a service takes no gradients (torch_twin: inference_mode)
  serve::warm_up([&](const Tensor& x) { return model(x); }, {784}, {1}, d);
  const std::vector<float> input = request_input(0);
  Latencies lat;
  CounterDelta delta(d);
  for (auto _ : state) {
    const auto start = Clock::now();
    benchmark::DoNotOptimize(infer(model, input, d));
    lat.add(Clock::now() - start);
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
  }
  delta.report(state);
  state.counters["p50_us"] = lat.percentile(0.50);
  state.counters["p99_us"] = lat.percentile(0.99);
}

void mlp_infer_b1(benchmark::State& state, Device d) { one_client(state, d, RawMlp(d)); }

// Requests 300 us apart: what one costs once the engine's threads have had time to go idle.
void mlp_infer_b1_apart(benchmark::State& state, Device d) {
  one_client(state, d, RawMlp(d), std::chrono::microseconds(300));
}

void mlp_infer_b1_module(benchmark::State& state, Device d) {
  const nn::Sequential model = module_mlp(d);
  one_client(state, d, model);
}

void mlp_infer_b1_recorded(benchmark::State& state, Device d) { one_client(state, d, recorded(RawMlp(d), d)); }

void mlp_infer_b1_module_recorded(benchmark::State& state, Device d) {
  one_client(state, d, recorded(module_mlp(d), d));
}

// Eight closed-loop clients for `seconds` per iteration; `request(k)` answers one request.
template <class Request> void eight_clients(benchmark::State& state, Request request) {
  constexpr double kSeconds = 1.0;
  std::size_t total = 0;
  Latencies all;
  double elapsed = 0;
  for (auto _ : state) {
    std::vector<Latencies> lat(kClients);
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    const auto start = Clock::now();
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] {
        const NoGradGuard no_grad;
        const std::vector<float> input = request_input(c);
        while (!stop.load(std::memory_order_relaxed)) {
          const auto t0 = Clock::now();
          benchmark::DoNotOptimize(request(input));
          lat[c].add(Clock::now() - t0);
        }
      });
    std::this_thread::sleep_for(std::chrono::duration<double>(kSeconds));
    stop.store(true);
    for (auto& t : clients) t.join();
    elapsed += std::chrono::duration<double>(Clock::now() - start).count();
    for (auto& l : lat) {
      total += l.count();
      all.merge(l);
    }
  }
  state.counters["requests_per_s"] = static_cast<double>(total) / elapsed;
  state.counters["p50_us"] = all.percentile(0.50);
  state.counters["p99_us"] = all.percentile(0.99);
}

void concurrent_infer(benchmark::State& state, Device d) {
  const RawMlp model(d);
  serve::warm_up(model, {784}, {1}, d);
  eight_clients(state, [&](const std::vector<float>& input) { return infer(model, input, d); });
}

void concurrent_infer_batcher(benchmark::State& state, Device d) {
  const RawMlp model(d);
  // A 50 us gathering window: with no wait the worker took each request as it came while the
  // clients (8 threads on 2 cores here) waited for a core to submit theirs, and batches held 1.5
  // requests (28k req/s); with 50 us they hold 7 (34-37k req/s, p99 0.6-0.7 ms); 100-400 us
  // gave no more (30-34k).
  serve::Batcher batcher(model, {784}, {.max_batch = kClients, .max_wait = std::chrono::microseconds(50), .device = d});
  batcher.warm_up();
  const serve::BatcherStats before = batcher.stats();
  eight_clients(state, [&](const std::vector<float>& input) { return batcher.submit(input).get(); });
  const serve::BatcherStats after = batcher.stats();
  state.counters["mean_batch"] = static_cast<double>(after.completed - before.completed) /
                                 static_cast<double>(std::max<std::uint64_t>(1, after.batches - before.batches));
}

}  // namespace

void register_serve(Device device) {
  auto latency = [](benchmark::internal::Benchmark* b) {
    return b->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(1.0)->Repetitions(1);
  };
  auto throughput = [](benchmark::internal::Benchmark* b) {
    return b->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(2)->Repetitions(1);
  };
  latency(benchmark::RegisterBenchmark("mlp_infer_b1", mlp_infer_b1, device));
  latency(benchmark::RegisterBenchmark("mlp_infer_b1/module", mlp_infer_b1_module, device));
  latency(benchmark::RegisterBenchmark("mlp_infer_b1/recorded", mlp_infer_b1_recorded, device));
  latency(benchmark::RegisterBenchmark("mlp_infer_b1/module_recorded", mlp_infer_b1_module_recorded, device));
  latency(benchmark::RegisterBenchmark("mlp_infer_b1/apart", mlp_infer_b1_apart, device));
  throughput(benchmark::RegisterBenchmark("concurrent_infer", concurrent_infer, device));
  throughput(benchmark::RegisterBenchmark("concurrent_infer/batcher", concurrent_infer_batcher, device));
}

}  // namespace kiln::bench
