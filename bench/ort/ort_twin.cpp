// The ONNX Runtime twin of kiln's serving workloads (shared/WORKLOADS.md): the engine a user
// would otherwise embed to serve a model, through its C API.
//
//   ort_twin --lib libonnxruntime.so.1 --model mlp.onnx [--only id,id] [--seconds S]
//
//   mlp_infer_b1      one request at a time, batch 1: p50 and p99 latency (µs) of one request,
//                     input in host memory -> result in host memory; best p50 of 1 and 2 intra-op
//                     threads; then, with that many, requests 300 us apart ("ort_apart").
//   concurrent_infer  8 client threads sharing one session (Run is thread-safe), each sending
//                     batch-1 requests back to back: requests/s and p99 latency (µs); best req/s
//                     of 1 and 2 intra-op threads.
//
// Prints one JSON line per workload: {"id", "unit", "better", "ort", "ort_p99", "ort_threads", ...}.
// Each request wraps the caller's input and output buffers as tensors (no copies by the twin) and
// runs the session, as a service handler would; wall time per request by steady_clock. Every
// measurement warms up first and then runs for a bounded time. ONNX Runtime's session and the
// check of the model's output: ort_session.h.
#include <atomic>
#include <set>
#include <sstream>
#include <thread>

#include "ort_session.h"

namespace {

using namespace kiln_ort;
using Clock = std::chrono::steady_clock;
constexpr int kClients = 8;

struct Figure {
  double value = 0, p99 = 0;
  std::size_t requests = 0;
};

// mlp_infer_b1 on one session: warm-up, then requests one after another for `seconds`, the
// client asleep for `gap` after each (outside its latency; kiln's mlp_infer_b1/apart).
Figure latency(const Session& s, double seconds, std::chrono::microseconds gap = std::chrono::microseconds(0)) {
  std::vector<float> in = check_input(), out(kOut);
  const auto warm_until = Clock::now() + std::chrono::duration<double>(std::min(0.2, seconds / 5));
  while (Clock::now() < warm_until) s.infer(in.data(), out.data());
  std::vector<double> us;
  us.reserve(1 << 20);
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  for (auto t0 = Clock::now(); t0 < until;) {
    s.infer(in.data(), out.data());
    const auto t1 = Clock::now();
    us.push_back(micros(t1 - t0));
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
    t0 = gap.count() > 0 ? Clock::now() : t1;
  }
  Figure f;
  f.requests = us.size();
  f.p99 = percentile(us, 0.99);
  f.value = percentile(us, 0.50);
  return f;
}

// concurrent_infer on one shared session: kClients closed-loop clients. Requests that finish in
// the window [start + warm-up, start + warm-up + seconds] count; their latencies give the p99.
Figure throughput(const Session& s, double seconds) {
  struct Span {
    Clock::time_point begin, end;
  };
  const double warm = std::min(0.3, seconds / 4);
  std::atomic<bool> stop{false};
  std::vector<std::vector<Span>> spans(kClients);
  std::vector<std::thread> clients;
  const auto start = Clock::now();
  const auto from = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warm));
  const auto to = from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::vector<float> in = check_input(), out(kOut);
      in[0] += static_cast<float>(c);  // each client its own request
      auto& mine = spans[c];
      mine.reserve(1 << 20);
      while (!stop.load(std::memory_order_relaxed)) {
        const auto t0 = Clock::now();
        s.infer(in.data(), out.data());
        mine.push_back({t0, Clock::now()});
      }
    });
  }
  std::this_thread::sleep_until(to);
  stop = true;
  for (auto& t : clients) t.join();
  std::vector<double> us;
  for (const auto& mine : spans)
    for (const Span& sp : mine)
      if (sp.end >= from && sp.end <= to) us.push_back(micros(sp.end - sp.begin));
  Figure f;
  f.requests = us.size();
  f.value = static_cast<double>(us.size()) / seconds;
  f.p99 = percentile(us, 0.99);
  return f;
}

// Four significant digits, in plain notation (12345 rather than 1.234e+04).
std::string fmt(double v) {
  char buf[48];
  const int magnitude = v == 0 ? 0 : static_cast<int>(std::floor(std::log10(std::abs(v))));
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, 3 - magnitude), v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, model, only;
  double seconds = 1.0;  // per configuration measured; two configurations per workload
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--lib") lib = value();
    else if (a == "--model") model = value();
    else if (a == "--only") only = value();
    else if (a == "--seconds") seconds = std::atof(value().c_str());
    else fail("usage: ort_twin --lib libonnxruntime.so.1 --model mlp.onnx [--only id,id] [--seconds S]");
  }
  if (lib.empty() || model.empty()) fail("--lib and --model are required");
  if (!(seconds > 0)) fail("--seconds must be positive");
  std::set<std::string> ids;
  std::stringstream list(only);
  for (std::string id; std::getline(list, id, ',');)
    if (!id.empty()) ids.insert(id);
  auto wanted = [&](const char* id) { return ids.empty() || ids.count(id) > 0; };

  g_program = "ort_twin";
  Env* env = open_runtime(lib);
  std::fprintf(stderr, "ort_twin: %.3g s per configuration\n", seconds);

  if (wanted("mlp_infer_b1")) {
    Figure best;
    int best_threads = 0;
    for (int threads : {1, 2}) {
      Session s(env, model, threads, /*spin=*/true);
      check_output(s, model);
      const Figure f = latency(s, seconds);
      std::fprintf(stderr, "ort_twin: mlp_infer_b1 on %d intra-op thread(s): p50 %s us, p99 %s us (%zu requests)\n",
                   threads, fmt(f.value).c_str(), fmt(f.p99).c_str(), f.requests);
      if (best_threads == 0 || f.value < best.value) best = f, best_threads = threads;
    }
    // The same session's requests 300 us apart (kiln's mlp_infer_b1/apart).
    Session s(env, model, best_threads, /*spin=*/true);
    const Figure apart = latency(s, seconds, std::chrono::microseconds(300));
    std::fprintf(stderr, "ort_twin: mlp_infer_b1, requests 300 us apart, %d intra-op thread(s): p50 %s us, p99 %s us\n",
                 best_threads, fmt(apart.value).c_str(), fmt(apart.p99).c_str());
    std::printf("{\"id\": \"mlp_infer_b1\", \"unit\": \"us\", \"better\": \"lower\", \"ort\": %s, \"ort_p99\": %s, "
                "\"ort_threads\": %d, \"ort_apart\": %s, \"ort_apart_p99\": %s}\n",
                fmt(best.value).c_str(), fmt(best.p99).c_str(), best_threads, fmt(apart.value).c_str(),
                fmt(apart.p99).c_str());
    std::fflush(stdout);
  }
  if (wanted("concurrent_infer")) {
    Figure best;
    int best_threads = 0;
    // One intra-op thread: each client's Run computes on its own thread, the 8 share the 2 cores.
    // Two: each Run may also split across the session's pool thread, which must not spin while
    // idle (ORT's default): with 8 callers it would take a core from them.
    for (int threads : {1, 2}) {
      Session s(env, model, threads, /*spin=*/false);
      check_output(s, model);
      const Figure f = throughput(s, seconds);
      std::fprintf(stderr, "ort_twin: concurrent_infer, %d clients, %d intra-op thread(s): %s req/s, p99 %s us\n",
                   kClients, threads, fmt(f.value).c_str(), fmt(f.p99).c_str());
      if (best_threads == 0 || f.value > best.value) best = f, best_threads = threads;
    }
    std::printf("{\"id\": \"concurrent_infer\", \"unit\": \"req/s\", \"better\": \"higher\", \"ort\": %s, "
                "\"ort_p99\": %s, \"ort_threads\": %d, \"ort_clients\": %d}\n",
                fmt(best.value).c_str(), fmt(best.p99).c_str(), best_threads, kClients);
    std::fflush(stdout);
  }
  g_api->ReleaseEnv(env);
  // The library stays loaded: its thread pools' teardown runs at exit.
  return 0;
}
