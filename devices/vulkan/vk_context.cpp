#include "kiln/devices/vulkan/vk_context.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "kiln/devices/vulkan/vk_coop_api.h"
#include "kiln/base/log.h"

namespace kiln::vk {

bool PhysicalDeviceInfo::usable() const { return why_unusable().empty(); }

std::string PhysicalDeviceInfo::why_unusable() const {
  if (api_version < VK_API_VERSION_1_2) return "needs Vulkan 1.2";
  if (compute_queue_family == UINT32_MAX) return "has no compute queue";
  if (!buffer_device_address) return "lacks bufferDeviceAddress";
  if (!shader_int64) return "lacks shaderInt64";
  return {};
}

const char* PhysicalDeviceInfo::type_name() const {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

namespace {

PhysicalDeviceInfo describe(VkPhysicalDevice pd) {
  PhysicalDeviceInfo info;
  info.handle = pd;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  info.name = props.deviceName;
  info.type = props.deviceType;
  info.api_version = props.apiVersion;
  info.driver_version = props.driverVersion;
  info.vendor_id = props.vendorID;
  info.device_id = props.deviceID;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (std::uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes = std::max<std::uint64_t>(info.device_local_bytes, mem.memoryHeaps[h].size);

  std::uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  // Prefer a compute-only family (an async compute queue), else any family with compute.
  for (std::uint32_t f = 0; f < n; ++f) {
    const VkQueueFlags flags = families[f].queueFlags;
    if (!(flags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (info.compute_queue_family == UINT32_MAX || !(flags & VK_QUEUE_GRAPHICS_BIT)) info.compute_queue_family = f;
  }
  if (info.compute_queue_family != UINT32_MAX) {
    info.compute_queue_count = families[info.compute_queue_family].queueCount;
    info.timestamp_valid_bits = families[info.compute_queue_family].timestampValidBits;
    info.timestamp_period_ns = props.limits.timestampPeriod;
  }

  std::uint32_t n_ext = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, nullptr);
  std::vector<VkExtensionProperties> exts(n_ext);
  if (n_ext) vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, exts.data());
  bool has_coop_nv = false, has_exec_props = false, has_coop_khr = false, has_coop2 = false, has_bf16 = false;
  for (const auto& e : exts) {
    has_coop_nv |= std::string(e.extensionName) == VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    has_coop_khr |= std::string(e.extensionName) == kKhrCooperativeMatrixExtension;
    has_coop2 |= std::string(e.extensionName) == kNvCooperativeMatrix2Extension;
    has_bf16 |= std::string(e.extensionName) == kKhrShaderBfloat16Extension;
    has_exec_props |= std::string(e.extensionName) == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
  }

  if (props.apiVersion >= VK_API_VERSION_1_2) {
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    // Only the structures of extensions the device has.
    if (has_exec_props) {
      exec.pNext = f12.pNext;
      f12.pNext = &exec;
    }
    if (has_coop_nv) {
      coop.pNext = f12.pNext;
      f12.pNext = &coop;
    }
    CoopFeaturesKhr coop_khr;
    Coop2FeaturesNv coop2;
    Bfloat16FeaturesKhr bf16;
    if (has_coop_khr && has_coop2) {
      coop_khr.pNext = &coop2;
      coop2.pNext = f12.pNext;
      f12.pNext = &coop_khr;
      if (has_bf16) {
        bf16.pNext = f12.pNext;
        f12.pNext = &bf16;
      }
    }
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.pNext = &f12;
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &f11;
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    info.coop_matrix_nv = has_coop_nv && coop.cooperativeMatrix && f12.vulkanMemoryModel && f12.shaderFloat16 &&
                          f11.storageBuffer16BitAccess;
    info.coop_matrix_workgroup = has_coop_khr && has_coop2 && coop_khr.cooperativeMatrix &&
                                 coop2.cooperativeMatrixWorkgroupScope && coop2.cooperativeMatrixFlexibleDimensions &&
                                 f12.vulkanMemoryModel && f12.shaderFloat16 && f11.storageBuffer16BitAccess;
    info.coop_matrix_tensor_loads = info.coop_matrix_workgroup && coop2.cooperativeMatrixTensorAddressing;
    info.coop_matrix_bf16 = info.coop_matrix_workgroup && has_bf16 && bf16.shaderBFloat16Type &&
                            bf16.shaderBFloat16CooperativeMatrix;
    info.buffer_device_address = f12.bufferDeviceAddress;
    info.shader_int64 = f2.features.shaderInt64;
    info.storage_8bit = f12.storageBuffer8BitAccess;
    info.storage_16bit = f11.storageBuffer16BitAccess;
    info.shader_float16 = f12.shaderFloat16;
    info.shader_int8 = f12.shaderInt8;
    info.host_query_reset = f12.hostQueryReset;
    info.executable_statistics = has_exec_props && exec.pipelineExecutableInfo;
    VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &p12;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    info.nan_preserve_f32 = p12.shaderSignedZeroInfNanPreserveFloat32;
    info.f16_conversions = f12.shaderFloat16 && p12.shaderRoundingModeRTEFloat16 && p12.shaderDenormPreserveFloat16 &&
                           p12.roundingModeIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE &&
                           p12.denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE &&
                           std::getenv("KILN_VULKAN_F16_BITS") == nullptr;
  }
  return info;
}

}  // namespace

Instance::Instance() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kiln";
  app.pEngineName = "kiln";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  check(vkCreateInstance(&ci, nullptr, &instance_), "vkCreateInstance");
  std::uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  if (r == VK_SUCCESS && n) r = vkEnumeratePhysicalDevices(instance_, &n, pds.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    vkDestroyInstance(instance_, nullptr);
    throw_result(r, "vkEnumeratePhysicalDevices");
  }
  for (std::uint32_t i = 0; i < n; ++i) devices_.push_back(describe(pds[i]));
}

Instance::~Instance() {
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

// Shared while someone uses it, never kept by a static: a static would destroy the instance
// after the driver's own exit handlers (registered while the instance was created) have already
// unloaded the driver, and vkDestroyInstance would jump into unmapped code (NVIDIA does this).
// The engine's devices hold it, so it goes with the engine, before those handlers run.
std::shared_ptr<Instance> Instance::get() {
  static std::mutex mutex;
  static std::weak_ptr<Instance> current;
  std::lock_guard lock(mutex);
  std::shared_ptr<Instance> instance = current.lock();
  if (!instance) {
    instance = std::make_shared<Instance>();
    current = instance;
  }
  return instance;
}

int best_device_index(const std::vector<PhysicalDeviceInfo>& devices) {
  int best = -1, best_rank = -1;
  for (int i = 0; i < static_cast<int>(devices.size()); ++i) {
    if (!devices[i].usable()) continue;
    int rank = 0;
    switch (devices[i].type) {
      case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: rank = 3; break;
      case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: rank = 2; break;
      case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: rank = 1; break;
      default: rank = 0;
    }
    if (rank > best_rank) best = i, best_rank = rank;
  }
  return best;
}

Context::Context(std::shared_ptr<Instance> instance, const PhysicalDeviceInfo& info, std::uint32_t queues)
    : instance_(std::move(instance)), info_(info) {
  KILN_CHECK(info_.usable(), "vulkan", info_.name + " " + info_.why_unusable());
  vkGetPhysicalDeviceProperties(info_.handle, &props_);
  vkGetPhysicalDeviceMemoryProperties(info_.handle, &memory_);
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  vkGetPhysicalDeviceProperties2(info_.handle, &p2);
  max_allocation_ = m3.maxMemoryAllocationSize;

  const std::uint32_t queue_count = std::max(1u, std::min(queues, info_.compute_queue_count));
  const std::vector<float> priorities(queue_count, 1.0f);
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = info_.compute_queue_family;
  qci.queueCount = queue_count;
  qci.pQueuePriorities = priorities.data();

  // Enable exactly what kernels may use and the device has.
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.bufferDeviceAddress = VK_TRUE;
  f12.storageBuffer8BitAccess = info_.storage_8bit;
  f12.shaderFloat16 = info_.shader_float16;
  f12.shaderInt8 = info_.shader_int8;
  f12.hostQueryReset = info_.host_query_reset;
  f12.timelineSemaphore = VK_FALSE;
  f12.vulkanMemoryModel = info_.coop_matrix_nv || info_.coop_matrix_workgroup;
  std::vector<const char*> extensions;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  coop.cooperativeMatrix = VK_TRUE;
  if (info_.coop_matrix_nv) {
    coop.pNext = f12.pNext;
    f12.pNext = &coop;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  CoopFeaturesKhr coop_khr;
  coop_khr.cooperativeMatrix = VK_TRUE;
  Coop2FeaturesNv coop2;
  coop2.cooperativeMatrixWorkgroupScope = VK_TRUE;
  coop2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
  coop2.cooperativeMatrixTensorAddressing = info_.coop_matrix_tensor_loads;
  if (info_.coop_matrix_workgroup) {
    coop_khr.pNext = &coop2;
    coop2.pNext = f12.pNext;
    f12.pNext = &coop_khr;
    extensions.push_back(kKhrCooperativeMatrixExtension);
    extensions.push_back(kNvCooperativeMatrix2Extension);
  }
  Bfloat16FeaturesKhr bf16;
  bf16.shaderBFloat16Type = VK_TRUE;
  bf16.shaderBFloat16CooperativeMatrix = VK_TRUE;
  if (info_.coop_matrix_bf16) {
    bf16.pNext = f12.pNext;
    f12.pNext = &bf16;
    extensions.push_back(kKhrShaderBfloat16Extension);
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  exec.pipelineExecutableInfo = VK_TRUE;
  captures_statistics_ = info_.executable_statistics && log_enabled(spdlog::level::debug);
  if (captures_statistics_) {
    exec.pNext = f12.pNext;
    f12.pNext = &exec;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.storageBuffer16BitAccess = info_.storage_16bit;
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.features.shaderInt64 = VK_TRUE;
  f2.pNext = &f11;

  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  dci.ppEnabledExtensionNames = extensions.empty() ? nullptr : extensions.data();
  check(vkCreateDevice(info_.handle, &dci, nullptr, &device_), "vkCreateDevice");
  for (std::uint32_t q = 0; q < queue_count; ++q) {
    queues_.push_back(std::make_unique<Queue>());
    vkGetDeviceQueue(device_, info_.compute_queue_family, q, &queues_.back()->handle);
  }
  if (log_enabled(spdlog::level::debug))
    logger().debug(
        "vulkan: opened {} ({}), {} of {} compute queue(s) asked for ({} in the family), 8-bit storage {}, "
        "16-bit storage {}, float16 {} (hardware f16 conversions {}), NV cooperative matrix {}, workgroup-scope "
        "cooperative matrix {}",
        info_.name, info_.type_name(), queue_count, queues, info_.compute_queue_count, info_.storage_8bit,
        info_.storage_16bit, info_.shader_float16, info_.f16_conversions, info_.coop_matrix_nv,
        info_.coop_matrix_workgroup);
}

VkResult Context::submit(std::uint32_t stream, const VkSubmitInfo& si, VkFence fence) const {
  Queue& q = *queues_[queue_of(stream)];
  std::lock_guard lock(q.mutex);
  return vkQueueSubmit(q.handle, 1, &si, fence);
}

void Context::wait_queue_idle(std::uint32_t stream) const {
  Queue& q = *queues_[queue_of(stream)];
  std::lock_guard lock(q.mutex);
  vkQueueWaitIdle(q.handle);
}

Context::~Context() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyDevice(device_, nullptr);
  }
}

std::uint32_t Context::find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                        VkMemoryPropertyFlags preferred) const {
  std::uint32_t fallback = UINT32_MAX;
  for (std::uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return i;
    if (fallback == UINT32_MAX) fallback = i;
  }
  return fallback;
}

}  // namespace kiln::vk
