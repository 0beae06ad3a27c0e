// devices/vulkan private: compute pipelines by key. In memory, a key maps to its pipeline for
// the device's lifetime. On disk ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
// ~/.cache/kiln), a directory per device (name, vendor/device id, driver version) holds the
// SPIR-V of each kernel, named by a hash of its key and GLSL source (a changed kernel never
// loads stale code), and the driver's VkPipelineCache blob, so a second process skips both
// glslang and most of the driver's compile. Disk failures are logged, never raised.
//
// SPIRV-Tools' performance passes are off unless KILN_SPIRV_OPTIMIZE=1: the drivers optimize
// again anyway, and the passes cost more than they gave. On an H200 (2026-12-07) they took about
// a second per tiled matmul kernel, and the main job's first epoch on an empty cache took 14 s
// with them against 2.2 s without (warm epochs 1.2-1.5 s either way); warm kernels were as fast
// or faster without them (conv2d f32 +17%, conv2d_backward +11%, softmax_rows +9%, gelu +7%,
// the f16 tensor-core matmul equal) but for the f32 matmul of 4096 (-7%). On lavapipe, which
// compiles every kernel with LLVM's optimizer, they cost more than the rest of a kernel's compile
// and gave slower kernels. A kernel's optimized and unoptimized SPIR-V are cached apart.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kiln/devices/vulkan/vk_context.h"
#include "kiln/devices/vulkan/vk_shader.h"

namespace kiln::vk {

// Words of a kernel's argument block that travel in push constants: 128 bytes in all, the size
// every Vulkan device supports. The prelude's KilnPush (vk_prelude.cpp) is sized from it.
inline constexpr std::size_t kPushWords = 14;

// What every kernel receives in its push constants (see vk_kernels.h): the first kPushWords
// words of its argument block; the address of the rest (0 when there is none); the address of
// the device's error flag. Arguments in push constants cost the kernel no memory reads: from
// host memory, every workgroup's first reads crossed the bus.
struct PushConstants {
  VkDeviceAddress args = 0;  // words kPushWords.. of the block
  VkDeviceAddress error_flag = 0;
  std::uint64_t words[kPushWords] = {};
};
static_assert(sizeof(PushConstants) == 128);

struct Pipeline {
  std::string name;
  Owned<VkPipeline> pipeline;
};

struct PipelineCacheStats {
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;   // SPIR-V loaded from disk
  std::uint64_t compiles = 0;    // GLSL compiled with glslang
};

class PipelineCache {
 public:
  // `dir` empty: the default directory from the environment; "-" disables the disk cache.
  PipelineCache(const Context& ctx, std::string dir = {});
  ~PipelineCache();  // saves the VkPipelineCache blob
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // The pipeline for `key`; `source` is called only when the key is not in memory.
  const Pipeline& get(const std::string& key, const char* name, const std::function<std::string()>& source);
  VkPipelineLayout layout() const { return layout_.get(); }
  PipelineCacheStats stats() const;
  const std::string& directory() const { return dir_; }  // with the device's subdirectory
  SpirvOptimizer optimizer() const { return optimizer_; }

  static std::string default_root();

 private:
  // The SPIR-V of `glsl` (from disk, else compiled and saved) as a pipeline; no lock held.
  Pipeline build(const std::string& key, const char* name, const std::string& glsl, bool& from_disk);
  Pipeline create(const char* name, const std::vector<std::uint32_t>& spirv);
  void log_statistics(const std::string& name, VkPipeline pipeline) const;  // name and key

  const Context& ctx_;
  std::string dir_;
  SpirvOptimizer optimizer_;
  Owned<VkPipelineLayout> layout_;
  Owned<VkPipelineCache> driver_cache_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::unordered_map<std::string, std::shared_future<const Pipeline*>> compiling_;  // by another thread
  PipelineCacheStats stats_;
};

}  // namespace kiln::vk
