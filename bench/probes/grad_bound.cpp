// kiln_grad_bound: how much faster this machine computes grad_threads' gradients with the shards
// on several threads than with them one after another on all cores, with no engine at all — the
// bound under grad_threads' speedup (shared/WORKLOADS.md). The work is the MLP 784-512-512-10 on a
// batch of 128 split into shards, the products of its forward and backward pass (no gradient of
// the data, as kiln and PyTorch skip it), each product split over a group of cores pinned one
// thread each, every part one single-threaded OpenBLAS call, spin barriers between products:
//   serial:   one group of every core runs the shards one after another;
//   parallel: the cores in as many groups as shards, each group its own shard at the same time.
// The elementwise work between products (bias, ReLU and its gradient) is left out: the bound is
// the products'. Medians of `iterations` after a tenth as many warm-up ones.
// With fewer cores than shards, the groups are one core each and take several shards in turn.
// Usage: kiln_grad_bound [shards] [iterations] [cores]   (default 2, 200, every core)
// Prints one JSON line: serial and parallel ms and their ratio, the speedup the products allow.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/probes/pinned_threads.h"
#include "kiln/devices/cpu/blas_core.h"

extern "C" void openblas_set_num_threads(int);

namespace {

using kiln::probe::Barrier;
using kiln::probe::pin;


// C[m, n] = op(A) op(B), row-major, the part of C's rows (or columns, when C has more of them)
// that member `part` of `parts` computes.
struct Product {
  bool ta, tb;
  int m, n, k;
  const float *a, *b;
  float* c;
  void run_part(int part, int parts) const {
    const int lda = ta ? m : k, ldb = tb ? k : n;
    if (m >= n) {
      const int r0 = m * part / parts, r1 = m * (part + 1) / parts;
      if (r0 == r1) return;
      const float* ap = ta ? a + r0 : a + static_cast<long>(r0) * lda;
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, r1 - r0, n, k, 1.0f, ap,
                  lda, b, ldb, 0.0f, c + static_cast<long>(r0) * n, n);
    } else {
      const int c0 = n * part / parts, c1 = n * (part + 1) / parts;
      if (c0 == c1) return;
      const float* bp = tb ? b + static_cast<long>(c0) * ldb : b + c0;
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, c1 - c0, k, 1.0f, a,
                  lda, bp, ldb, 0.0f, c + c0, n);
    }
  }
};

// One shard's tensors and the chain of products of its forward and backward pass.
struct Shard {
  std::vector<float> x, h1, h2, y, dy, dh2, dh1, dw1, dw2, dw3;
  std::vector<Product> chain;
  Shard(int rows, const std::vector<float>& w1, const std::vector<float>& w2, const std::vector<float>& w3)
      : x(rows * 784, 0.01f), h1(rows * 512), h2(rows * 512), y(rows * 10), dy(rows * 10, 0.001f),
        dh2(rows * 512), dh1(rows * 512), dw1(784 * 512), dw2(512 * 512), dw3(512 * 10) {
    chain = {
        {false, false, rows, 512, 784, x.data(), w1.data(), h1.data()},   // h1 = x W1
        {false, false, rows, 512, 512, h1.data(), w2.data(), h2.data()},  // h2 = h1 W2
        {false, false, rows, 10, 512, h2.data(), w3.data(), y.data()},    // y = h2 W3
        {true, false, 512, 10, rows, h2.data(), dy.data(), dw3.data()},   // dW3 = h2ᵀ dy
        {false, true, rows, 512, 10, dy.data(), w3.data(), dh2.data()},   // dh2 = dy W3ᵀ
        {true, false, 512, 512, rows, h1.data(), dh2.data(), dw2.data()}, // dW2 = h1ᵀ dh2
        {false, true, rows, 512, 512, dh2.data(), w2.data(), dh1.data()}, // dh1 = dh2 W2ᵀ
        {true, false, 784, 512, rows, x.data(), dh1.data(), dw1.data()},  // dW1 = xᵀ dh1
    };
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int shards = argc > 1 ? std::atoi(argv[1]) : 2;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 200;
  const int cores = argc > 3 ? std::atoi(argv[3]) : static_cast<int>(std::thread::hardware_concurrency());
  if (shards < 1 || 128 % shards != 0 || cores < 1) {
    std::fprintf(stderr, "kiln_grad_bound: shards must divide 128, and cores be at least 1\n");
    return 2;
  }
  // OpenBLAS's kernels as kiln runs them (on a CPU newer than its table OpenBLAS falls back to
  // its SSE3 ones; kiln chooses by the CPU's features: devices/cpu/blas_core.h).
  const std::string core = kiln::cpu::select_blas_core();
  openblas_set_num_threads(1);  // every part one call on its own thread
  const std::vector<float> w1(784 * 512, 0.01f), w2(512 * 512, 0.01f), w3(512 * 10, 0.01f);
  std::vector<Shard> all;
  all.reserve(shards);
  for (int s = 0; s < shards; ++s) all.emplace_back(128 / shards, w1, w2, w3);

  // groups == 1: every core runs each shard's chain in turn; otherwise group g (cores
  // [g*size, (g+1)*size)) runs shards g, g + groups, ... in turn (one each when there are as
  // many cores as shards). Member 0 of all the cores times the iterations.
  auto measure = [&](int groups) {
    const int size = cores / groups;
    std::vector<std::unique_ptr<Barrier>> group_barriers;
    for (int g = 0; g < groups; ++g) group_barriers.push_back(std::make_unique<Barrier>(size));
    Barrier everyone(groups * size);
    std::vector<double> ms;
    auto member = [&](int core) {
      pin(core);
      const int g = core / size, part = core % size;
      for (int it = 0; it < iterations + iterations / 10; ++it) {
        everyone.arrive_and_wait();
        const auto t0 = std::chrono::steady_clock::now();
        for (int s = g; s < shards; s += groups)
          for (const Product& p : all[s].chain) {
            p.run_part(part, size);
            group_barriers[g]->arrive_and_wait();
          }
        everyone.arrive_and_wait();
        if (core == 0 && it >= iterations / 10)
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    };
    std::vector<std::thread> pool;
    for (int c = 1; c < groups * size; ++c) pool.emplace_back(member, c);
    member(0);
    for (std::thread& t : pool) t.join();
    return median(ms);
  };
  const double serial = measure(1), parallel = measure(std::min(shards, cores));
  std::printf("{\"id\": \"grad_bound\", \"shards\": %d, \"cores\": %d, \"blas_core\": \"%s\", \"serial_ms\": %.3f, "
              "\"parallel_ms\": %.3f, \"speedup\": %.3f}\n",
              shards, cores, core.c_str(), serial, parallel, serial / parallel);
}
