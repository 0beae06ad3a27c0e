// grad_threads: per-module gradients of the MLP 784-512-512-10 on a batch of 128 split in two,
// computed on 2 threads at once (each with its own handles to the parameters) and summed, against
// the same two halves on one thread. The figure is the speedup of 2 threads over 1 (report.py
// reads the "speedup" counter); each iteration times both, alternating, to share noise.
// grad_threads_4: the same batch in four quarters, on 4 threads against one.
//
// grad_threads_streams (a GPU opened with two streams, KILN_VULKAN_QUEUES=2): the same, but the
// second thread works on the GPU's second stream, with its own copy of the parameters there (made
// once, as a data-parallel replica would be); its gradients come back with `to` before the sum.
#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kiln/autograd/autograd.h"
#include "bench/bench_common.h"

namespace kiln::bench {
namespace {

Tensor mlp_loss(const std::vector<Tensor>& p, Tensor x) {
  for (std::size_t l = 0; l < p.size(); l += 2) {
    x = add(matmul(std::move(x), p[l]), p[l + 1]);
    if (l + 2 < p.size()) x = relu(std::move(x));
  }
  return mean(sum(mul(x, x), {1}));
}

Gradients shard_gradients(const std::vector<Tensor>& params, const Tensor& shard) {
  std::vector<Tensor> leaves;
  for (const Tensor& p : params) leaves.push_back(require_grad(p));
  return backward(mlp_loss(leaves, shard));
}

Gradients one_thread(const std::vector<Tensor>& params, const std::vector<Tensor>& shards) {
  Gradients total;
  for (const Tensor& s : shards) total += shard_gradients(params, s);
  return total;
}

// Thread t takes shard t with the parameters replicas[t] (the same handles, or a copy on another
// stream); the sum is keyed by replicas[0], on its device (`to` is the identity there).
Gradients on_threads(const std::vector<std::vector<Tensor>>& replicas, const std::vector<Tensor>& shards) {
  std::vector<Gradients> g(shards.size());
  std::vector<std::exception_ptr> errors(shards.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < shards.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        g[t] = shard_gradients(replicas[t], shards[t]);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  for (auto& th : threads) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  Gradients total = g[0];
  for (std::size_t t = 1; t < shards.size(); ++t)
    for (std::size_t i = 0; i < replicas[0].size(); ++i)
      total.accumulate(replicas[0][i].id(), to(g[t].get(replicas[t][i]), replicas[0][i].device()));
  return total;
}

// `second`: where the second thread works (the device itself, or its GPU's second stream).
void grad_threads(benchmark::State& state, Device device, Device second, int threads) {
  Generator gen(3);
  const TensorOptions opts{DType::f32, device};
  const std::vector<Tensor> params = {mul(randn(Shape{784, 512}, gen, opts), 0.035), zeros(Shape{512}, opts),
                                      mul(randn(Shape{512, 512}, gen, opts), 0.044), zeros(Shape{512}, opts),
                                      mul(randn(Shape{512, 10}, gen, opts), 0.044),  zeros(Shape{10}, opts)};
  const std::vector<Tensor> shards = chunk(randn(Shape{128, 784}, gen, opts), threads, 0);
  std::vector<std::vector<Tensor>> replicas(static_cast<std::size_t>(threads), params);
  std::vector<Tensor> thread_shards = shards;
  if (second != device) {
    for (Tensor& p : replicas[1]) p = to(p, second);
    thread_shards[1] = to(shards[1], second);
  }
  auto finish = [&](const Gradients& g) {
    for (const Tensor& p : params) g.get(p).to_vector<float>().get();
  };
  try {
    finish(one_thread(params, shards));
    finish(on_threads(replicas, thread_shards));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());  // e.g. no backward rules in this build
    return;
  }
  using Clock = std::chrono::steady_clock;
  double serial = 0, parallel = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    finish(one_thread(params, shards));
    auto t1 = Clock::now();
    finish(on_threads(replicas, thread_shards));
    auto t2 = Clock::now();
    serial += std::chrono::duration<double>(t1 - t0).count();
    parallel += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(std::chrono::duration<double>(t2 - t1).count());
  }
  state.counters["speedup"] = parallel > 0 ? serial / parallel : 0.0;
  state.counters["one_thread_ms"] = 1e3 * serial / static_cast<double>(state.iterations());
  state.counters["threads_ms"] = 1e3 * parallel / static_cast<double>(state.iterations());
}

// The device's GPU's second stream: the next Vulkan device, when both names say they are
// streams of one GPU ("vulkan:0 (NAME, stream 1 of 2 on queue 0)", "vulkan:1 (NAME, stream 2 ...").
std::optional<Device> second_stream(Device device) {
  if (device.kind != DeviceKind::vulkan) return std::nullopt;
  const Device next = Device::vulkan(device.index + 1);
  const std::vector<Device> all = devices();
  if (std::find(all.begin(), all.end(), next) == all.end()) return std::nullopt;
  auto gpu = [](const std::string& name) {
    const std::size_t open = name.find(" ("), stream = name.rfind(", stream ");
    return open == std::string::npos || stream == std::string::npos ? std::string() : name.substr(open, stream - open);
  };
  const std::string a = gpu(device_name(device)), b = gpu(device_name(next));
  if (a.empty() || a != b) return std::nullopt;
  return next;
}

}  // namespace

void register_autograd(Device device) {
  auto timed = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true)->MinTime(0.5);
  };
  timed(benchmark::RegisterBenchmark("grad_threads", grad_threads, device, device, 2));
  timed(benchmark::RegisterBenchmark("grad_threads_4", grad_threads, device, device, 4));
  if (const std::optional<Device> second = second_stream(device))
    timed(benchmark::RegisterBenchmark("grad_threads_streams", grad_threads, device, *second, 2));
}

}  // namespace kiln::bench
