// The few entry points of ONNX Runtime's C API that the ORT twin (ort_twin.cpp) calls, declared
// here because the runtime comes as a bare shared library (libonnxruntime.so.1 from the npm
// package onnxruntime-node) without its headers.
//
// OrtGetApiBase() returns two function pointers (GetApi, GetVersionString); GetApi(version)
// returns the OrtApi table: a struct made only of function pointers. The slot indices below follow
// ORT's OrtApi member order, which ORT keeps ABI-stable (new entries are only appended), so a
// slot's index does not change between releases. The twin still checks the library's version
// string at run time (kOrtVersion) and refuses any other release.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln_ort {

inline constexpr const char* kOrtVersion = "1.30.0";
// The API version the twin asks GetApi for: that of the release above.
inline constexpr std::uint32_t kOrtApiVersion = 30;

// Opaque handles: the twin only passes them back to the runtime.
struct Status;
struct Env;
struct SessionOptions;
struct Session;
struct MemoryInfo;
struct Value;
struct RunOptions;

// The C enums' values the twin passes (C enums are int-sized on this ABI).
enum LoggingLevel : int { kLogWarning = 2 };
enum GraphOptimizationLevel : int { kOptimizeAll = 99 };
enum AllocatorType : int { kDeviceAllocator = 0, kArenaAllocator = 1 };
enum MemType : int { kMemTypeDefault = 0 };
enum ElementType : int { kFloat = 1 };

// Every call returns a Status* (nullptr on success) unless noted.
struct Api {
  const char* (*GetErrorMessage)(const Status* status) noexcept;                                  // 2
  Status* (*CreateEnv)(LoggingLevel level, const char* log_id, Env** out) noexcept;               // 3
  Status* (*CreateSession)(const Env* env, const char* model_path, const SessionOptions* options,  // 7
                           Session** out) noexcept;
  Status* (*Run)(Session* session, const RunOptions* run_options, const char* const* input_names,  // 9
                 const Value* const* inputs, std::size_t input_count, const char* const* output_names,
                 std::size_t output_count, Value** outputs) noexcept;
  Status* (*CreateSessionOptions)(SessionOptions** out) noexcept;                                   // 10
  Status* (*SetSessionGraphOptimizationLevel)(SessionOptions* options, GraphOptimizationLevel level) noexcept;  // 23
  Status* (*SetIntraOpNumThreads)(SessionOptions* options, int threads) noexcept;                 // 24
  Status* (*SetInterOpNumThreads)(SessionOptions* options, int threads) noexcept;                 // 25
  Status* (*CreateTensorWithDataAsOrtValue)(const MemoryInfo* info, void* data, std::size_t bytes,  // 49
                                            const std::int64_t* shape, std::size_t rank, ElementType type,
                                            Value** out) noexcept;
  Status* (*GetTensorMutableData)(Value* value, void** out) noexcept;                              // 51
  Status* (*CreateCpuMemoryInfo)(AllocatorType type, MemType mem_type, MemoryInfo** out) noexcept;  // 69
  void (*ReleaseEnv)(Env*) noexcept;                                                               // 92
  void (*ReleaseStatus)(Status*) noexcept;                                                         // 93
  void (*ReleaseMemoryInfo)(MemoryInfo*) noexcept;                                                 // 94
  void (*ReleaseSession)(Session*) noexcept;                                                       // 95
  void (*ReleaseValue)(Value*) noexcept;                                                           // 96
  void (*ReleaseSessionOptions)(SessionOptions*) noexcept;                                         // 100
  Status* (*AddSessionConfigEntry)(SessionOptions* options, const char* key, const char* value) noexcept;  // 130

  // Fills the members from the OrtApi table that GetApi returned.
  explicit Api(const void* table) {
    take(table, 2, GetErrorMessage);
    take(table, 3, CreateEnv);
    take(table, 7, CreateSession);
    take(table, 9, Run);
    take(table, 10, CreateSessionOptions);
    take(table, 23, SetSessionGraphOptimizationLevel);
    take(table, 24, SetIntraOpNumThreads);
    take(table, 25, SetInterOpNumThreads);
    take(table, 49, CreateTensorWithDataAsOrtValue);
    take(table, 51, GetTensorMutableData);
    take(table, 69, CreateCpuMemoryInfo);
    take(table, 92, ReleaseEnv);
    take(table, 93, ReleaseStatus);
    take(table, 94, ReleaseMemoryInfo);
    take(table, 95, ReleaseSession);
    take(table, 96, ReleaseValue);
    take(table, 100, ReleaseSessionOptions);
    take(table, 130, AddSessionConfigEntry);
  }

 private:
  // Slot `index` of a table of function pointers (all of one size on this ABI).
  template <typename Fn>
  static void take(const void* table, std::size_t index, Fn& slot) {
    static_assert(sizeof(Fn) == sizeof(void*));
    std::memcpy(&slot, static_cast<const char*>(table) + index * sizeof(void*), sizeof(Fn));
  }
};

// OrtApiBase: what the exported `OrtGetApiBase()` returns.
struct ApiBase {
  const void* (*GetApi)(std::uint32_t version) noexcept;
  const char* (*GetVersionString)() noexcept;
};
using GetApiBaseFn = const ApiBase* (*)() noexcept;

}  // namespace kiln_ort
