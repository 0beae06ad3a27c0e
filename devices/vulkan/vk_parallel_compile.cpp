#include "kiln/devices/vulkan/vk_parallel_compile.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include "kiln/base/log.h"
#include "kiln/devices/vulkan/vk_device.h"

namespace kiln::vk {

namespace {

std::size_t compile_threads() {
  if (const char* env = std::getenv("KILN_COMPILE_THREADS"); env && *env) {
    const long n = std::strtol(env, nullptr, 10);
    if (n >= 1) return static_cast<std::size_t>(n);
  }
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
}

}  // namespace

void compile_in_parallel(VulkanDevice& dev, const std::vector<KernelRequest>& requests) {
  const std::size_t threads = std::min(compile_threads(), requests.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < requests.size();) {
      try {
        dev.pipeline(requests[i].key, requests[i].name, requests[i].source);
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

}  // namespace kiln::vk
