// ONNX Runtime through its C API (ort_api.h), for the programs that measure it beside kiln: the
// twin (ort_twin.cpp) and the interleaved probe (bench/probes/ort_interleaved.cpp). The library
// is dlopen()ed (its headers do not ship with it); the model comes from make_mlp_onnx.py, whose
// MODEL.check output the first request must reproduce.
#pragma once
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "ort_api.h"

namespace kiln_ort {

using Clock = std::chrono::steady_clock;

constexpr int kIn = 784, kOut = 10;
constexpr const char* kInputName = "x";
constexpr const char* kOutputName = "y";

// The program's name, in front of its fatal messages.
inline const char* g_program = "ort";

[[noreturn]] inline void fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", g_program, message.c_str());
  std::exit(1);
}

inline const Api* g_api = nullptr;

// Every C API call returns a status; a non-null one is an error, fatal for a benchmark.
inline void check(Status* status, const char* what) {
  if (status == nullptr) return;
  std::string message = g_api->GetErrorMessage(status);
  g_api->ReleaseStatus(status);
  fail(std::string(what) + ": " + message);
}

struct Session {
  Env* env;
  Session* session = nullptr;
  MemoryInfo* cpu = nullptr;

  // `spin`: whether the intra-op pool's threads spin while they wait for work (ORT's default;
  // fastest for one caller, a waste of the cores' time when many callers compete for them).
  Session(Env* e, const std::string& model, int intra_threads, bool spin) : env(e) {
    SessionOptions* options = nullptr;
    check(g_api->CreateSessionOptions(&options), "CreateSessionOptions");
    check(g_api->SetIntraOpNumThreads(options, intra_threads), "SetIntraOpNumThreads");
    check(g_api->SetInterOpNumThreads(options, 1), "SetInterOpNumThreads");
    check(g_api->SetSessionGraphOptimizationLevel(options, kOptimizeAll), "SetSessionGraphOptimizationLevel");
    check(g_api->AddSessionConfigEntry(options, "session.intra_op.allow_spinning", spin ? "1" : "0"),
          "AddSessionConfigEntry");
    check(g_api->CreateSession(env, model.c_str(), options, &session), "CreateSession");
    g_api->ReleaseSessionOptions(options);
    check(g_api->CreateCpuMemoryInfo(kArenaAllocator, kMemTypeDefault, &cpu), "CreateCpuMemoryInfo");
  }
  ~Session() {
    g_api->ReleaseMemoryInfo(cpu);
    g_api->ReleaseSession(session);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // One request: `in` (kIn floats) -> `out` (kOut floats), both the caller's host memory.
  void infer(float* in, float* out) const {
    const std::int64_t in_shape[] = {1, kIn}, out_shape[] = {1, kOut};
    Value* x = nullptr;
    Value* y = nullptr;
    check(g_api->CreateTensorWithDataAsOrtValue(cpu, in, kIn * sizeof(float), in_shape, 2, kFloat, &x),
          "CreateTensorWithDataAsOrtValue");
    check(g_api->CreateTensorWithDataAsOrtValue(cpu, out, kOut * sizeof(float), out_shape, 2, kFloat, &y),
          "CreateTensorWithDataAsOrtValue");
    const char* in_names[] = {kInputName};
    const char* out_names[] = {kOutputName};
    const Value* inputs[] = {x};
    check(g_api->Run(session, nullptr, in_names, inputs, 1, out_names, 1, &y), "Run");
    void* data = nullptr;
    check(g_api->GetTensorMutableData(y, &data), "GetTensorMutableData");
    // ORT writes into a preallocated output; were it ever to hand back its own buffer, copy.
    if (data != out) std::copy_n(static_cast<const float*>(data), kOut, out);
    g_api->ReleaseValue(y);
    g_api->ReleaseValue(x);
  }
};

// The input whose output make_mlp_onnx.py wrote to MODEL.check (the same formula there).
inline std::vector<float> check_input() {
  std::vector<float> x(kIn);
  for (int i = 0; i < kIn; ++i) x[i] = static_cast<float>(((i * 37) % 101) / 101.0 - 0.5);
  return x;
}

inline void check_output(const Session& s, const std::string& model) {
  std::ifstream f(model + ".check");
  if (!f) fail("cannot read " + model + ".check (written by make_mlp_onnx.py)");
  std::vector<float> in = check_input(), out(kOut);
  s.infer(in.data(), out.data());
  for (int i = 0; i < kOut; ++i) {
    double expected = 0;
    if (!(f >> expected)) fail(model + ".check: expected " + std::to_string(kOut) + " numbers");
    if (std::abs(out[i] - expected) > 1e-4 + 1e-3 * std::abs(expected))
      fail("wrong output " + std::to_string(i) + ": " + std::to_string(out[i]) + ", expected " +
           std::to_string(expected));
  }
}

inline double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Nearest-rank percentile (q in (0, 1]) of `v`, which it sorts.
inline double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// Opens the library and its API (only the release ort_api.h was checked against) and an
// environment; prints the version on stderr.
inline Env* open_runtime(const std::string& lib) {
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) fail(std::string("dlopen: ") + dlerror());
  auto get_base = reinterpret_cast<GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
  if (get_base == nullptr) fail(lib + " exports no OrtGetApiBase: not ONNX Runtime?");
  const ApiBase* base = get_base();
  const std::string version = base->GetVersionString();
  // The slots of ort_api.h were checked against this release; refuse any other.
  if (version != kOrtVersion) fail(lib + " is ONNX Runtime " + version + ", ort_api.h is written for " + kOrtVersion);
  const void* table = base->GetApi(kOrtApiVersion);
  if (table == nullptr) fail("ONNX Runtime " + version + " refuses API version " + std::to_string(kOrtApiVersion));
  static const Api api(table);
  g_api = &api;
  Env* env = nullptr;
  check(api.CreateEnv(kLogWarning, g_program, &env), "CreateEnv");
  std::fprintf(stderr, "%s: ONNX Runtime %s\n", g_program, version.c_str());
  return env;
}

}  // namespace kiln_ort
