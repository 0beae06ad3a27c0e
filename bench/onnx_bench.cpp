// ONNX workloads (shared/WORKLOADS.md): onnx_resnet18 (torchvision's resnet18, batch 1 and, as
// "/b16", 16, [3, 224, 224]) and onnx_encoder (a 4-layer transformer encoder, d 256, 4 heads, seq
// 128, batch 1), exported by PyTorch (bench/onnx/make_models.py, which bench/run runs into the
// build tree and names in KILN_BENCH_ONNX_DIR) and imported by kiln. Latency of one run from a
// host vector to a host vector, p50 and p99 in ms, and the process's CPU time a run ("cpu_ms":
// both cores' work, spinning included); "/recorded" runs the imported model as a
// RecordedPass. The twin is ONNX Runtime on the same file (bench/onnx/twin.sh), with the same input.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "kiln/autograd/autograd.h"
#include "kiln/onnx/onnx.h"

namespace kiln::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct OnnxWorkload {
  const char* file;
  Shape shape;
};

// x[i] = ((i * 37) % 101) / 101 - 0.5, as bench/onnx/ort_twin.cpp fills its input.
std::vector<float> twin_input(const Shape& shape) {
  std::vector<float> x(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<double>((i * 37) % 101) / 101.0 - 0.5);
  return x;
}

// CPU time of the whole process (every thread), in ms: on a shared machine whose other work takes
// the cores by turns, the work a run costs beside its latency (ort_twin.cpp reports the same).
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double percentile(std::vector<double> ms, double q) {
  std::sort(ms.begin(), ms.end());
  return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
}

void onnx_latency(benchmark::State& state, Device d, OnnxWorkload w, bool record) {
  const char* dir = std::getenv("KILN_BENCH_ONNX_DIR");
  const std::filesystem::path path = std::filesystem::path(dir ? dir : "") / w.file;
  if (dir == nullptr || !std::filesystem::exists(path)) {
    state.SkipWithError(("no " + path.string() +
                         ": bench/run writes the models (bench/onnx/make_models.py DIR, then "
                         "KILN_BENCH_ONNX_DIR=DIR)")
                            .c_str());
    return;
  }
  const NoGradGuard no_grad;  // inference, as ONNX Runtime runs it
  const onnx::Model model = onnx::load(path).to(d);
  std::function<Tensor(const Tensor&)> forward = [&](const Tensor& x) { return model(x); };
  std::optional<RecordedPass> pass;
  if (record) {
    try {
      pass = RecordedPass::record(forward, w.shape, DType::f32, d);
    } catch (const Error& e) {  // a model whose forward reads values on the host cannot be recorded
      state.SkipWithError(e.what());
      return;
    }
    forward = [&](const Tensor& x) { return (*pass)(x); };
  }
  const std::vector<float> input = twin_input(w.shape);
  const auto run = [&] { return forward(from_vector(input, w.shape, d)).to_vector<float>().get(); };
  for (int k = 0; k < 3; ++k) run();  // weights packed, caches filled (the twin warms up 3 runs too)
  std::vector<double> ms;
  CounterDelta delta(d);
  const double cpu_before = process_cpu_ms();
  for (auto _ : state) {
    const auto start = Clock::now();
    benchmark::DoNotOptimize(run());
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  delta.report(state);
  state.counters["p50_ms"] = percentile(ms, 0.50);
  state.counters["p99_ms"] = percentile(ms, 0.99);
  state.counters["cpu_ms"] = (process_cpu_ms() - cpu_before) / static_cast<double>(ms.size());
}

}  // namespace

void register_onnx(Device device) {
  const auto latency = [](benchmark::internal::Benchmark* b) {
    return b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(3.0)->Repetitions(1);
  };
  const OnnxWorkload resnet_b1{"resnet18.onnx", {1, 3, 224, 224}}, resnet_b16{"resnet18.onnx", {16, 3, 224, 224}};
  const OnnxWorkload encoder{"encoder.onnx", {1, 128, 256}};
  latency(benchmark::RegisterBenchmark("onnx_resnet18", onnx_latency, device, resnet_b1, false));
  latency(benchmark::RegisterBenchmark("onnx_resnet18/b16", onnx_latency, device, resnet_b16, false));
  latency(benchmark::RegisterBenchmark("onnx_resnet18/recorded", onnx_latency, device, resnet_b1, true));
  latency(benchmark::RegisterBenchmark("onnx_encoder", onnx_latency, device, encoder, false));
  latency(benchmark::RegisterBenchmark("onnx_encoder/recorded", onnx_latency, device, encoder, true));
}

}  // namespace kiln::bench
