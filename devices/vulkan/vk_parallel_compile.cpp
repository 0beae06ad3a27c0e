#include "kiln/devices/vulkan/vk_parallel_compile.h"

#include <algorithm>
#include <cstdlib>

#include "kiln/base/log.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_pipeline_cache.h"

namespace kiln::vk {

namespace {

std::size_t compile_threads() {
  if (const char* env = std::getenv("KILN_COMPILE_THREADS"); env && *env) {
    const long n = std::strtol(env, nullptr, 10);
    if (n >= 1) return static_cast<std::size_t>(n);
  }
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
}

void compile_on(std::size_t threads, PipelineCache& pipelines, const std::vector<KernelRequest>& requests,
                const std::atomic<bool>* stop) {
  threads = std::min(threads, requests.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (!stop || !stop->load()) && (i = next.fetch_add(1)) < requests.size();) {
      try {
        pipelines.get(requests[i].key, requests[i].name, requests[i].source);
      } catch (const std::exception& e) {
        // Raised again, with its message, where the kernel is launched.
        if (log_enabled(spdlog::level::debug)) logger().debug("vulkan: compiling {} failed: {}", requests[i].key, e.what());
      }
    }
  };
  if (threads <= 1) return work();
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace

void compile_in_parallel(PipelineCache& pipelines, const std::vector<KernelRequest>& requests,
                         const std::atomic<bool>* stop) {
  compile_on(compile_threads(), pipelines, requests, stop);
}

void compile_in_parallel(VulkanDevice& dev, const std::vector<KernelRequest>& requests) {
  compile_in_parallel(dev.pipelines(), requests);
}

BackgroundCompiler::BackgroundCompiler(std::shared_ptr<PipelineCache> pipelines) : pipelines_(std::move(pipelines)) {}

BackgroundCompiler::~BackgroundCompiler() {
  {
    std::lock_guard lock(mutex_);
    queue_.clear();
  }
  stop_ = true;
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

bool BackgroundCompiler::ready(const std::string& job, const std::function<std::vector<KernelRequest>()>& make) {
  {
    std::lock_guard lock(mutex_);
    if (done_.count(job)) return true;
    if (asked_.count(job)) return false;
  }
  // The sources now, as text: the job may run after whatever they refer to is gone.
  std::vector<KernelRequest> requests = make();
  for (KernelRequest& r : requests) {
    std::string glsl = r.source();
    r.source = [glsl = std::move(glsl)] { return glsl; };
  }
  std::lock_guard lock(mutex_);
  if (!asked_.insert(job).second) return done_.count(job) > 0;
  if (log_enabled(spdlog::level::debug))
    logger().debug("vulkan: compiling {} kernels of {} in the background", requests.size(), job);
  queue_.emplace_back(job, std::move(requests));
  if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
  changed_.notify_all();
  return false;
}

void BackgroundCompiler::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return (queue_.empty() && !running_) || stop_; });
}

void BackgroundCompiler::work() {
  // Half the cores (at least one): the device's own threads and the program's go on meanwhile.
  const std::size_t threads = std::max<std::size_t>(1, compile_threads() / 2);
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return !queue_.empty() || stop_; });
    if (stop_) return;
    auto [job, requests] = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    compile_on(threads, *pipelines_, requests, &stop_);
    lock.lock();
    running_ = false;
    if (!stop_) done_.insert(job);
    changed_.notify_all();
  }
}

bool background_autotune_enabled() {
  const char* env = std::getenv("KILN_AUTOTUNE_BACKGROUND");
  return !(env && std::string(env) == "0");
}

}  // namespace kiln::vk
