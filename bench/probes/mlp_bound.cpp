// kiln_mlp_bound: the fastest this machine runs one request of the serving MLP (784-512-512-10,
// ReLU, batch 1, f32 weights) at all, whatever the engine — the bound under mlp_infer_b1. It is
// code for this one model and nothing else: one thread pinned to each core (the first is the
// client), each holding its share of every layer's weights in its own cache, laid out in the
// order it reads them, spinning (never sleeping) between requests and on a barrier between
// layers; no dispatch, no allocation, no futures. Two figures, p50 and p99 over the requests:
//   stream: each core only reads its share of the weights (a sum of every float) and meets the
//           others at one barrier — the cache bandwidth alone, no arithmetic, no layer barriers;
//   mlp:    the three layers (each core its share of a layer's outputs, a barrier after each
//           layer, the last layer of 10 outputs on the client), checked against a plain loop.
//   fma:    the machine's arithmetic peak, every thread running independent vector FMAs, and
//           what it bounds: requests per second when requests are batched (concurrent_infer's
//           batcher), each request's 2 x 668,672 flops at that peak and nothing else.
// An engine that is x times ONNX Runtime's time per request on the same machine can be no faster
// than these; bench/run prints them beside mlp_infer_b1 (bench/RESULTS.md has the figures).
// Usage: kiln_mlp_bound [requests] [threads]   (default 20000 requests, one thread a core up to 8)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "bench/probes/pinned_threads.h"

namespace {

using kiln::probe::Barrier;
using kiln::probe::pin;

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
constexpr int kBlock = 8;  // vectors of outputs per pass over a layer's inputs: 8 accumulators

struct Layer {
  int k, n;
};
constexpr Layer kLayers[] = {{784, 512}, {512, 512}, {512, 10}};

// A thread's share of one layer: outputs [j0, j1), its weights as blocks of kBlock vectors of
// outputs, each block [k][kBlock * kLanes] contiguous: one sequential read per block.
struct Share {
  int j0 = 0, j1 = 0;
  std::vector<Vec> weights;  // (j1 - j0) / kLanes / kBlock blocks of k * kBlock vectors
};

float weight(const std::vector<float>& w, const Layer& l, int p, int j) { return w[static_cast<std::size_t>(p) * l.n + j]; }


struct Model {
  int threads;
  std::vector<std::vector<float>> full;           // [layer] weights [k][n], for the check
  std::vector<std::vector<Share>> shares;         // [thread][layer]
  alignas(64) float x[784], h1[512], h2[512], out[16];
};

// Thread t's share of layer l's outputs: whole blocks of kBlock vectors; the last layer (fewer
// outputs than one vector) is the client's alone, computed with scalars.
Share make_share(const std::vector<float>& w, const Layer& l, int t, int threads) {
  Share s;
  constexpr int cols = kBlock * kLanes;
  const int blocks = l.n / cols;
  if (blocks == 0) {
    if (t == 0) s.j1 = l.n;
    return s;
  }
  s.j0 = blocks * t / threads * cols;
  s.j1 = blocks * (t + 1) / threads * cols;
  for (int j = s.j0; j < s.j1; j += cols)
    for (int p = 0; p < l.k; ++p)
      for (int v = 0; v < kBlock; ++v) {
        Vec vec;
        for (int e = 0; e < kLanes; ++e) vec[e] = weight(w, l, p, j + v * kLanes + e);
        s.weights.push_back(vec);
      }
  return s;
}

// out[j0..j1) = relu?(in · W) for one share.
void layer(const Share& s, const Layer& l, const std::vector<float>& full, const float* in, float* out, bool relu) {
  if (s.weights.empty()) {
    for (int j = s.j0; j < s.j1; ++j) {
      float acc = 0;
      for (int p = 0; p < l.k; ++p) acc += in[p] * weight(full, l, p, j);
      out[j] = relu ? std::max(acc, 0.0f) : acc;
    }
    return;
  }
  const Vec* w = s.weights.data();
  for (int j = s.j0; j < s.j1; j += kBlock * kLanes) {
    Vec acc[kBlock] = {};
    for (int p = 0; p < l.k; ++p, w += kBlock) {
      const Vec xp = Vec{} + in[p];
#pragma GCC unroll 8
      for (int v = 0; v < kBlock; ++v) acc[v] += xp * w[v];
    }
    for (int v = 0; v < kBlock; ++v)
      for (int e = 0; e < kLanes; ++e) out[j + v * kLanes + e] = relu ? std::max(acc[v][e], 0.0f) : acc[v][e];
  }
}

float stream(const std::vector<Share>& shares) {
  Vec acc[kBlock] = {};
  for (const Share& s : shares)
    for (std::size_t i = 0; i + kBlock <= s.weights.size(); i += kBlock)
#pragma GCC unroll 8
      for (int v = 0; v < kBlock; ++v) acc[v] += s.weights[i + v];
  float sum = 0;
  for (const Vec& a : acc)
    for (int e = 0; e < kLanes; ++e) sum += a[e];
  return sum;
}

// GFLOP/s of one thread running only independent FMAs for about `seconds` (12 chains hide the
// FMA latency of any current core with two FMA units).
double fma_gflops(double seconds) {
  constexpr int kChains = 12;
  Vec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = Vec{} + 0.001f * static_cast<float>(i);
  const Vec x = Vec{} + 0.999f, y = Vec{} + 0.0001f;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  long rounds = 0;
  double elapsed = 0;
  do {
    for (int r = 0; r < 100000; ++r)
#pragma GCC unroll 12
      for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * x + y;  // one FMA (GCC contracts)
    rounds += 100000;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < seconds);
  float sink = 0;
  for (const Vec& a : acc) sink += a[0];
  if (sink == 1234.5f) std::puts("");  // keeps the chains alive
  return static_cast<double>(rounds) * kChains * kLanes * 2 / elapsed / 1e9;
}

// Every thread at once, each pinned to its core.
double fma_peak(int threads) {
  std::vector<double> each(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      pin(t);
      each[t] = fma_gflops(0.3);
    });
  for (std::thread& t : pool) t.join();
  double total = 0;
  for (double g : each) total += g;
  return total;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  Model m;
  m.threads = threads;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 0.04f);
  for (const Layer& l : kLayers) {
    std::vector<float> w(static_cast<std::size_t>(l.k) * l.n);
    for (float& v : w) v = normal(gen);
    m.full.push_back(std::move(w));
  }
  for (float& v : m.x) v = std::abs(normal(gen)) * 20;
  m.shares.resize(threads);

  Barrier ready(threads), barrier(threads);
  std::atomic<int> mode{0};  // 0 wait, 1 stream, 2 mlp, 3 exit; set by the client per request
  std::atomic<unsigned> request{0};
  std::atomic<float> sink{0};
  auto work = [&](int t, int what) {
    if (what == 1) {
      sink.store(stream(m.shares[t]), std::memory_order_relaxed);
      barrier.arrive_and_wait();
      return;
    }
    layer(m.shares[t][0], kLayers[0], m.full[0], m.x, m.h1, true);
    barrier.arrive_and_wait();
    layer(m.shares[t][1], kLayers[1], m.full[1], m.h1, m.h2, true);
    barrier.arrive_and_wait();
    if (t == 0) layer(m.shares[t][2], kLayers[2], m.full[2], m.h2, m.out, false);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t)
    helpers.emplace_back([&, t] {
      pin(t);
      for (const Layer& l : kLayers) m.shares[t].push_back(make_share(m.full[&l - kLayers], l, t, threads));
      ready.arrive_and_wait();
      unsigned seen = 0;
      for (;;) {
        unsigned now;
        while ((now = request.load(std::memory_order_acquire)) == seen) __builtin_ia32_pause();
        seen = now;
        const int what = mode.load(std::memory_order_acquire);
        if (what == 3) return;
        work(t, what);
        barrier.arrive_and_wait();
      }
    });
  pin(0);
  for (const Layer& l : kLayers) m.shares[0].push_back(make_share(m.full[&l - kLayers], l, 0, threads));
  ready.arrive_and_wait();

  // The check: the last layer's outputs against a plain loop over the full weights.
  std::vector<float> h(m.x, m.x + 784);
  for (std::size_t li = 0; li < 3; ++li) {
    const Layer& l = kLayers[li];
    std::vector<float> next(l.n);
    for (int j = 0; j < l.n; ++j) {
      double acc = 0;
      for (int p = 0; p < l.k; ++p) acc += static_cast<double>(h[p]) * weight(m.full[li], l, p, j);
      next[j] = li < 2 ? std::max(static_cast<float>(acc), 0.0f) : static_cast<float>(acc);
    }
    h = std::move(next);
  }

  using Clock = std::chrono::steady_clock;
  auto run = [&](int what) {
    std::vector<double> us;
    for (int r = 0; r < requests + requests / 10; ++r) {
      const auto t0 = Clock::now();
      mode.store(what, std::memory_order_relaxed);
      request.fetch_add(1, std::memory_order_release);
      work(0, what);
      const auto t1 = Clock::now();
      if (r >= requests / 10) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      barrier.arrive_and_wait();  // every helper back to waiting before the next request
    }
    return us;
  };
  const std::vector<double> streamed = run(1), mlp = run(2);
  mode.store(3);
  request.fetch_add(1, std::memory_order_release);
  for (std::thread& t : helpers) t.join();

  double worst = 0;
  for (int j = 0; j < 10; ++j) worst = std::max(worst, static_cast<double>(std::abs(m.out[j] - h[j]) / (std::abs(h[j]) + 1e-3f)));
  if (worst > 1e-3) {
    std::fprintf(stderr, "kiln_mlp_bound: the probe's MLP disagrees with the plain loop (relative error %.3g)\n", worst);
    return 1;
  }
  // After the requests, on the same pinned cores: the arithmetic peak and what it allows.
  double macs = 0;
  for (const Layer& l : kLayers) macs += static_cast<double>(l.k) * l.n;
  const double peak = fma_peak(threads);
  std::printf("{\"id\": \"mlp_bound\", \"threads\": %d, \"lanes\": %d, \"requests\": %d, \"stream_p50_us\": %.2f, "
              "\"stream_p99_us\": %.2f, \"mlp_p50_us\": %.2f, \"mlp_p99_us\": %.2f, \"fma_peak_gflops\": %.1f, "
              "\"flop_bound_requests_per_s\": %.0f}\n",
              threads, kLanes, requests, percentile(streamed, 0.5), percentile(streamed, 0.99), percentile(mlp, 0.5),
              percentile(mlp, 0.99), peak, peak * 1e9 / (2 * macs));
}
