// kiln_handoff_bound: the most requests per second this machine passes through a request batcher
// at all, whatever the engine and the model — the bound under concurrent_infer's batcher from
// the threads' hand-offs alone. Eight client threads send requests back to back, as
// concurrent_infer's do; a worker gathers them (waits for a first one, then up to 50 us for a
// full batch of 8, woken at once when it fills, as serve::Batcher does), "computes" the batch by
// spinning for `compute_us`, and wakes the batch's callers with one notify, where they sleep
// (futexes, as kiln's CompletionSignal). With compute_us 0 nothing but the hand-offs costs time:
// clients waking, resubmitting and sleeping, the worker waking, on however many cores there are.
// A batch's compute spins on the worker's core alone, leaving the others to the clients: a
// forward pass on every core leaves them less, so this stays a bound for one too.
// Usage: kiln_handoff_bound [compute_us] [seconds]   (default 0 and 1)
// Prints one JSON line: requests per second, the mean batch, p50 and p99 latency in us.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kClients = 8;
constexpr std::size_t kMaxBatch = 8;
constexpr auto kMaxWait = std::chrono::microseconds(50);

struct Batcher {
  std::mutex mutex;
  std::condition_variable arrived;
  std::size_t queued = 0;
  bool stopping = false;
  std::uint64_t batches = 0;               // taken so far: the one gathering now is number `batches`
  std::uint64_t requests = 0;
  std::atomic<std::uint64_t> answered{0};  // batches answered; callers sleep on it

  // A client's request: it joins the batch gathering now and sleeps until that one is answered.
  void submit() {
    std::uint64_t mine;
    bool wake;
    {
      std::lock_guard lock(mutex);
      mine = batches;
      wake = ++queued == 1 || queued >= kMaxBatch;
    }
    if (wake) arrived.notify_one();
    for (std::uint64_t a = answered.load(); a <= mine; a = answered.load()) answered.wait(a);
  }

  void work(double compute_us) {
    for (;;) {
      std::unique_lock lock(mutex);
      arrived.wait(lock, [&] { return stopping || queued > 0; });
      if (stopping) return;
      if (queued < kMaxBatch) arrived.wait_until(lock, Clock::now() + kMaxWait, [&] { return queued >= kMaxBatch; });
      // Every queued request is in this batch (at most 8 clients): the answer wakes them all.
      requests += queued;
      queued = 0;
      const std::uint64_t batches_taken = ++batches;
      lock.unlock();
      const auto until = Clock::now() + std::chrono::duration<double, std::micro>(compute_us);
      while (Clock::now() < until) {
      }
      answered.store(batches_taken);
      answered.notify_all();
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  const double compute_us = argc > 1 ? std::atof(argv[1]) : 0.0;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  Batcher b;
  std::thread worker([&] { b.work(compute_us); });
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(kClients);
  std::vector<std::thread> clients;
  const auto start = Clock::now();
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      latencies[c].reserve(1 << 20);  // no reallocation between requests
      while (!stop.load(std::memory_order_relaxed)) {
        const auto t0 = Clock::now();
        b.submit();
        latencies[c].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  // Clients still asleep get their answer from the worker, which keeps running until they quit.
  for (auto& t : clients) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  {
    std::lock_guard lock(b.mutex);
    b.stopping = true;
  }
  b.arrived.notify_one();
  worker.join();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const auto pct = [&](double q) { return all.empty() ? 0.0 : all[static_cast<std::size_t>(q * static_cast<double>(all.size() - 1))]; };
  std::printf(
      "{\"id\": \"handoff_bound\", \"clients\": %d, \"compute_us\": %.1f, \"requests_per_s\": %.0f, \"mean_batch\": %.2f, "
      "\"p50_us\": %.1f, \"p99_us\": %.1f}\n",
      kClients, compute_us, static_cast<double>(all.size()) / elapsed,
      b.batches ? static_cast<double>(b.requests) / static_cast<double>(b.batches) : 0.0, pct(0.5), pct(0.99));
}
