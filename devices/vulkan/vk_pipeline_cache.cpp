#include "kiln/devices/vulkan/vk_pipeline_cache.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#include "kiln/devices/vulkan/vk_cache_file.h"
#include "kiln/devices/vulkan/vk_shader.h"
#include "kiln/base/log.h"

namespace kiln::vk {

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'S', 'P', 'V', '1'};

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void warn_disk(const std::string& what) {
  if (log_enabled(spdlog::level::warn)) logger().warn("vulkan pipeline cache: {}", what);
}

std::vector<char> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

// See the top of vk_pipeline_cache.h.
SpirvOptimizer spirv_optimizer() {
  const char* env = std::getenv("KILN_SPIRV_OPTIMIZE");
  return env && *env && std::string(env) != "0" ? SpirvOptimizer::performance : SpirvOptimizer::none;
}

}  // namespace

std::string PipelineCache::default_root() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  return "-";
}

PipelineCache::PipelineCache(const Context& ctx, std::string dir) : ctx_(ctx), optimizer_(spirv_optimizer()) {
  if (dir.empty()) dir = default_root();
  if (dir != "-") {
    const PhysicalDeviceInfo& info = ctx.info();
    const std::string tag = info.name + '|' + std::to_string(info.vendor_id) + ':' + std::to_string(info.device_id) +
                            '|' + std::to_string(info.driver_version) + '|' + std::to_string(info.api_version);
    dir_ = dir + "/vulkan-" + hex(fnv1a(tag));
  }

  if (log_enabled(spdlog::level::debug))
    logger().debug("vulkan: SPIR-V optimizer {} for {}", optimizer_ == SpirvOptimizer::none ? "off" : "on",
                   ctx.info().name);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(PushConstants)};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  check(vkCreatePipelineLayout(ctx.device(), &li, nullptr, &layout), "vkCreatePipelineLayout");
  layout_ = own(ctx.device(), layout);

  std::vector<char> blob;
  if (!dir_.empty()) blob = read_file(fs::path(dir_) / "pipelines.bin");
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = blob.size();
  ci.pInitialData = blob.empty() ? nullptr : blob.data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  if (vkCreatePipelineCache(ctx.device(), &ci, nullptr, &cache) != VK_SUCCESS) {
    // A blob from another driver build: start empty.
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    check(vkCreatePipelineCache(ctx.device(), &ci, nullptr, &cache), "vkCreatePipelineCache");
  }
  driver_cache_ = own(ctx.device(), cache);
}

PipelineCache::~PipelineCache() {
  if (dir_.empty() || stats_.compiles + stats_.disk_hits == 0) return;
  std::size_t size = 0;
  if (vkGetPipelineCacheData(ctx_.device(), driver_cache_.get(), &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(ctx_.device(), driver_cache_.get(), &size, data.data()) != VK_SUCCESS) return;
  if (const std::string why = write_cache_file(fs::path(dir_) / "pipelines.bin", data.data(), size); !why.empty())
    warn_disk(why);
}

PipelineCacheStats PipelineCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

const Pipeline& PipelineCache::get(const std::string& key, const char* name, const std::function<std::string()>& source) {
  // The lock covers the maps only: a kernel compiles outside it, so several threads (the
  // autotuner's candidates, vk_parallel_compile.h) compile at once, and a thread asking for a
  // kernel another is compiling waits for that one compile instead of repeating it.
  std::promise<const Pipeline*> promise;
  {
    std::unique_lock lock(mutex_);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) {
      ++stats_.memory_hits;
      return *it->second;
    }
    if (auto it = compiling_.find(key); it != compiling_.end()) {
      std::shared_future<const Pipeline*> pending = it->second;
      lock.unlock();
      return *pending.get();  // rethrows that compile's error
    }
    compiling_.emplace(key, promise.get_future().share());
  }
  try {
    bool from_disk = false;
    auto p = std::make_unique<Pipeline>(build(key, name, source(), from_disk));
    std::lock_guard lock(mutex_);
    ++(from_disk ? stats_.disk_hits : stats_.compiles);
    const Pipeline& ref = *p;
    pipelines_.emplace(key, std::move(p));
    compiling_.erase(key);
    promise.set_value(&ref);
    return ref;
  } catch (...) {
    std::lock_guard lock(mutex_);
    compiling_.erase(key);
    promise.set_exception(std::current_exception());
    throw;
  }
}

Pipeline PipelineCache::build(const std::string& key, const char* name, const std::string& glsl, bool& from_disk) {
  std::vector<std::uint32_t> spirv;
  fs::path file;
  if (!dir_.empty()) {
    // Optimized and unoptimized SPIR-V of one kernel are two files.
    const std::uint64_t seed = optimizer_ == SpirvOptimizer::none ? fnv1a(key, fnv1a("unoptimized")) : fnv1a(key);
    file = fs::path(dir_) / (hex(fnv1a(glsl, seed)) + ".spv");
    // Layout: magic, key length, key, SPIR-V words. The key guards against hash collisions.
    const std::vector<char> bytes = read_file(file);
    const std::size_t head = sizeof kMagic + 4 + key.size();
    std::uint32_t key_len = 0;
    if (bytes.size() > head && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0) {
      std::memcpy(&key_len, bytes.data() + sizeof kMagic, 4);
      if (key_len == key.size() && std::memcmp(bytes.data() + sizeof kMagic + 4, key.data(), key.size()) == 0 &&
          (bytes.size() - head) % 4 == 0) {
        spirv.resize((bytes.size() - head) / 4);
        std::memcpy(spirv.data(), bytes.data() + head, bytes.size() - head);
      }
    }
  }
  from_disk = !spirv.empty();
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  if (spirv.empty()) {
    spirv = compile_glsl(name, glsl, optimizer_);
    if (!file.empty()) {
      std::vector<char> bytes(sizeof kMagic + 4 + key.size() + spirv.size() * 4);
      const auto key_len = static_cast<std::uint32_t>(key.size());
      std::memcpy(bytes.data(), kMagic, sizeof kMagic);
      std::memcpy(bytes.data() + sizeof kMagic, &key_len, 4);
      std::memcpy(bytes.data() + sizeof kMagic + 4, key.data(), key.size());
      std::memcpy(bytes.data() + sizeof kMagic + 4 + key.size(), spirv.data(), spirv.size() * 4);
      if (const std::string why = write_cache_file(file, bytes.data(), bytes.size()); !why.empty()) warn_disk(why);
    }
  }
  const auto compiled = clock::now();
  Pipeline p = create(name, spirv);
  const auto created = clock::now();
  const std::string what = key.starts_with("fused") ? "fused elementwise" : key;
  if (log_enabled(spdlog::level::debug)) {
    // Where a first run's time goes: glslang and SPIRV-Tools here, the driver's compile next.
    const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    logger().debug("vulkan: pipeline {} ({}) {}: spir-v {:.1f} ms, driver {:.1f} ms", name, what,
                   from_disk ? "loaded from the disk cache" : "compiled", ms(compiled - start), ms(created - compiled));
  }
  if (ctx_.captures_statistics()) log_statistics(name + (" (" + what + ")"), p.pipeline.get());
  return p;
}

Pipeline PipelineCache::create(const char* name, const std::vector<std::uint32_t>& spirv) {
  const VkDevice dev = ctx_.device();
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = spirv.size() * 4;
  mi.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(dev, &mi, nullptr, &module), "vkCreateShaderModule");
  Owned<VkShaderModule> module_owner = own(dev, module);
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = layout_.get();
  if (ctx_.captures_statistics()) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline pipeline = VK_NULL_HANDLE;
  const VkResult r = vkCreateComputePipelines(dev, driver_cache_.get(), 1, &ci, nullptr, &pipeline);
  if (r != VK_SUCCESS) throw Error(name, std::string("vkCreateComputePipelines failed: ") + result_name(r));
  return Pipeline{name, own(dev, pipeline)};
}

// The driver's statistics of each executable of the pipeline, one debug line each (on NVIDIA:
// registers per thread, shared memory, spills; what decides how many workgroups fit an SM).
void PipelineCache::log_statistics(const std::string& name, VkPipeline pipeline) const {
  const VkDevice dev = ctx_.device();
  const auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(dev, "vkGetPipelineExecutablePropertiesKHR"));
  const auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR"));
  if (!properties || !statistics) return;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  std::uint32_t n = 0;
  if (properties(dev, &info, &n, nullptr) != VK_SUCCESS) return;
  std::vector<VkPipelineExecutablePropertiesKHR> executables(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  if (n == 0 || properties(dev, &info, &n, executables.data()) != VK_SUCCESS) return;
  for (std::uint32_t e = 0; e < n; ++e) {
    VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    which.pipeline = pipeline;
    which.executableIndex = e;
    std::uint32_t m = 0;
    if (statistics(dev, &which, &m, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (m && statistics(dev, &which, &m, stats.data()) != VK_SUCCESS) continue;
    std::string line;
    for (const auto& st : stats) {
      line += std::string(line.empty() ? "" : ", ") + st.name + " ";
      switch (st.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += st.value.b32 ? "yes" : "no"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(st.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(st.value.u64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: line += std::to_string(st.value.f64); break;
        default: line += "?";
      }
    }
    logger().debug("vulkan: pipeline {} [{}]: {}", name, executables[e].name, line);
  }
}

}  // namespace kiln::vk
