// The ONNX Runtime twin of the onnx_* workloads (shared/WORKLOADS.md): the same ONNX file that
// kiln imports, run by ONNX Runtime 1.30 through its C API (bench/ort/ort_api.h, the library
// dlopen()ed as bench/ort/get_onnxruntime.sh fetches it).
//
//   ort_twin --lib libonnxruntime.so.1 --model resnet18.onnx --input input --shape 1,3,224,224
//                 --id onnx_resnet18 [--field ort_b16] [--seconds S] [--expect output_0.pb]
//
// Latency of one run, input in host memory -> output in host memory (ONNX Runtime allocates the
// output): p50 and p99 in ms, best p50 of 1 and 2 intra-op threads, after a warm-up. Prints one
// JSON line: {"id", "unit": "ms", "better": "lower", "ort", "ort_p99", "ort_threads", "ort_cpu_ms"
// (the process's CPU time a run)}, the fields named FIELD, FIELD_p99... with --field (bench/report.py: a batch variant's). The input
// is x[i] = ((i * 37) % 101) / 101 - 0.5; --expect compares ONNX Runtime's output with a
// TensorProto (kiln-onnx run --save-outputs on the same input) and adds "max_abs_diff".
// Build: g++ -std=c++20 -O2 -Ibench -DONNX_ML=1 -DONNX_NAMESPACE=onnx bench/onnx/ort_twin.cpp
//        -ldl -lonnx_proto -lprotobuf
#include <dlfcn.h>
#include <time.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ort/ort_api.h"

namespace {

using namespace kiln_ort;
using Clock = std::chrono::steady_clock;

const Api* g_api = nullptr;

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "onnx_ort_twin: %s\n", message.c_str());
  std::exit(1);
}

void check(Status* status, const char* what) {
  if (status == nullptr) return;
  std::string message = g_api->GetErrorMessage(status);
  g_api->ReleaseStatus(status);
  fail(std::string(what) + ": " + message);
}

Env* open_runtime(const std::string& lib) {
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) fail(std::string("dlopen: ") + dlerror());
  auto get_base = reinterpret_cast<GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
  if (get_base == nullptr) fail(lib + " exports no OrtGetApiBase");
  const ApiBase* base = get_base();
  if (std::string(base->GetVersionString()) != kOrtVersion)
    fail("ort_api.h is written for ONNX Runtime " + std::string(kOrtVersion));
  static const Api api(base->GetApi(kOrtApiVersion));
  g_api = &api;
  Env* env = nullptr;
  check(api.CreateEnv(kLogWarning, "onnx_ort_twin", &env), "CreateEnv");
  return env;
}

// CPU time of the whole process (every thread), in ms (bench/onnx_bench.cpp reports the same).
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Figure {
  double p50 = 0, p99 = 0;
  double cpu_ms = 0;         // the process's CPU time a run
  double max_abs_diff = -1;  // against --expect, when given
};

// The float values of a serialized TensorProto (raw_data or float_data).
std::vector<float> read_expected(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::TensorProto t;
  if (!f || !t.ParseFromIstream(&f) || t.data_type() != onnx::TensorProto::FLOAT)
    fail("cannot read a float TensorProto from " + path);
  if (!t.raw_data().empty()) {
    std::vector<float> v(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    return v;
  }
  return {t.float_data().begin(), t.float_data().end()};
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * double(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

Figure measure(Env* env, const std::string& model, const std::string& input, const std::vector<std::int64_t>& shape,
               int threads, double seconds, const std::vector<float>& expected) {
  SessionOptions* options = nullptr;
  check(g_api->CreateSessionOptions(&options), "CreateSessionOptions");
  check(g_api->SetIntraOpNumThreads(options, threads), "SetIntraOpNumThreads");
  check(g_api->SetInterOpNumThreads(options, 1), "SetInterOpNumThreads");
  check(g_api->SetSessionGraphOptimizationLevel(options, kOptimizeAll), "SetSessionGraphOptimizationLevel");
  Session* session = nullptr;
  check(g_api->CreateSession(env, model.c_str(), options, &session), "CreateSession");
  g_api->ReleaseSessionOptions(options);
  MemoryInfo* cpu = nullptr;
  check(g_api->CreateCpuMemoryInfo(kArenaAllocator, kMemTypeDefault, &cpu), "CreateCpuMemoryInfo");
  std::size_t n = 1;
  for (auto d : shape) n *= std::size_t(d);
  std::vector<float> data(n);
  for (std::size_t i = 0; i < n; ++i) data[i] = float(((i * 37) % 101) / 101.0 - 0.5);
  Value* x = nullptr;
  check(g_api->CreateTensorWithDataAsOrtValue(cpu, data.data(), n * sizeof(float), shape.data(), shape.size(), kFloat,
                                              &x),
        "CreateTensorWithDataAsOrtValue");
  const char* in_names[] = {input.c_str()};
  const char* out_names[] = {"output"};
  const Value* inputs[] = {x};
  const auto run = [&] {
    Value* y = nullptr;
    check(g_api->Run(session, nullptr, in_names, inputs, 1, out_names, 1, &y), "Run");
    g_api->ReleaseValue(y);
  };
  for (int k = 0; k < 3; ++k) run();
  Figure f;
  if (!expected.empty()) {
    Value* y = nullptr;
    check(g_api->Run(session, nullptr, in_names, inputs, 1, out_names, 1, &y), "Run");
    void* out = nullptr;
    check(g_api->GetTensorMutableData(y, &out), "GetTensorMutableData");
    f.max_abs_diff = 0;
    for (std::size_t i = 0; i < expected.size(); ++i)
      f.max_abs_diff = std::max(f.max_abs_diff, double(std::abs(static_cast<const float*>(out)[i] - expected[i])));
    g_api->ReleaseValue(y);
  }
  std::vector<double> ms;
  const double cpu_before = process_cpu_ms();
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until || ms.size() < 5) {
    const auto t0 = Clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  f.cpu_ms = (process_cpu_ms() - cpu_before) / double(ms.size());
  g_api->ReleaseValue(x);
  g_api->ReleaseMemoryInfo(cpu);
  g_api->ReleaseSession(session);
  f.p50 = percentile(ms, 0.5);
  f.p99 = percentile(ms, 0.99);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, model, input = "input", id = "onnx", field = "ort", expect;
  std::vector<std::int64_t> shape;
  double seconds = 3;
  for (int k = 1; k + 1 < argc; k += 2) {
    const std::string flag = argv[k], value = argv[k + 1];
    if (flag == "--lib")
      lib = value;
    else if (flag == "--model")
      model = value;
    else if (flag == "--input")
      input = value;
    else if (flag == "--id")
      id = value;
    else if (flag == "--field")
      field = value;
    else if (flag == "--expect")
      expect = value;
    else if (flag == "--seconds")
      seconds = std::atof(value.c_str());
    else if (flag == "--shape") {
      std::stringstream ss(value);
      for (std::string d; std::getline(ss, d, ',');) shape.push_back(std::atoll(d.c_str()));
    } else {
      fail("unknown flag " + flag);
    }
  }
  if (lib.empty() || model.empty() || shape.empty()) fail("needs --lib, --model and --shape");
  Env* env = open_runtime(lib);
  const std::vector<float> expected = expect.empty() ? std::vector<float>{} : read_expected(expect);
  Figure best;
  int best_threads = 0;
  for (int threads : {1, 2}) {
    const Figure f = measure(env, model, input, shape, threads, seconds, expected);
    if (best_threads == 0 || f.p50 < best.p50) {
      best = f;
      best_threads = threads;
    }
  }
  const char* f = field.c_str();
  std::printf("{\"id\": \"%s\", \"unit\": \"ms\", \"better\": \"lower\", \"%s\": %.3f, \"%s_p99\": %.3f", id.c_str(), f,
              best.p50, f, best.p99);
  std::printf(", \"%s_threads\": %d, \"%s_cpu_ms\": %.3f", f, best_threads, f, best.cpu_ms);
  if (best.max_abs_diff >= 0) std::printf(", \"max_abs_diff\": %.3g", best.max_abs_diff);
  std::printf("}\n");
  g_api->ReleaseEnv(env);
  return 0;
}
