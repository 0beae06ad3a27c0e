// devices/vulkan private: compiling several kernels at once, now or in the background. The
// autotuner's first use of a shape class needs every candidate configuration's pipeline (14 or
// more); compiled one after another they cost seconds per class (SPIRV-Tools unrolls each matmul
// for about a second on one core, and the driver compiles it again), which made the first epoch
// of the main job on an H100 take 167 s against 1.2 s warm. Here they compile on up to one
// thread per core, and, where the autotuner's choice cannot change a value, off the critical
// path (BackgroundCompiler).
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kiln/devices/vulkan/vk_kernels.h"

namespace kiln::vk {

class PipelineCache;
class VulkanDevice;

// A pipeline to make: what VulkanDevice::launch would ask the pipeline cache for.
struct KernelRequest {
  std::string key;
  const char* name = "";
  SourceFn source;
};

// Makes each request's pipeline (from memory, disk or glslang), on several threads; returns
// when all are done (or, with `stop`, once it is set: the requests not begun are left). A request
// that fails is left for its launch to raise, with its message. KILN_COMPILE_THREADS=n caps the
// threads (default: the cores, at most 16).
void compile_in_parallel(PipelineCache& pipelines, const std::vector<KernelRequest>& requests,
                         const std::atomic<bool>* stop = nullptr);
void compile_in_parallel(VulkanDevice& dev, const std::vector<KernelRequest>& requests);

// Jobs of pipelines compiled on a thread of their own while the device goes on: the autotuner's
// candidates of a shape class, while the class runs on the heuristic's configuration (whose
// values are the same bits). One job at a time, each on up to half the cores, in the order asked.
// The device's member: its destructor drops the jobs not begun and waits for the one running.
class BackgroundCompiler {
 public:
  explicit BackgroundCompiler(std::shared_ptr<PipelineCache> pipelines);
  ~BackgroundCompiler();
  BackgroundCompiler(const BackgroundCompiler&) = delete;
  BackgroundCompiler& operator=(const BackgroundCompiler&) = delete;

  // Whether the job `job` has made every pipeline. The first call queues it with the requests
  // `make` gives; their GLSL is generated here, on the caller's thread, so nothing a request's
  // source refers to needs to outlive the call.
  bool ready(const std::string& job, const std::function<std::vector<KernelRequest>()>& make);
  // Waits until every job queued so far is done (tests, and a program that wants its tuning now).
  void wait_idle();

 private:
  void work();

  std::shared_ptr<PipelineCache> pipelines_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<std::string, std::vector<KernelRequest>>> queue_;
  std::set<std::string> asked_, done_;
  bool running_ = false;
  std::atomic<bool> stop_{false};
  std::thread worker_;  // started with the first job
};

// Whether the autotuner compiles its candidates in the background where their values agree
// (the default; KILN_AUTOTUNE_BACKGROUND=0 compiles and times them at first use, as before).
bool background_autotune_enabled();

}  // namespace kiln::vk
