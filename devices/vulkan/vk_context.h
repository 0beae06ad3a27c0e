// devices/vulkan private: the Vulkan instance (one per process), the physical devices it sees,
// and a Context per logical device: the VkDevice, its compute queues, and the features and
// limits that kernels depend on. bufferDeviceAddress and shaderInt64 are required (kernels
// address memory through 64-bit pointers); 8/16-bit storage and float16 are reported.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_common.h"

namespace kiln::vk {

// What a physical device offers, as found at enumeration.
struct PhysicalDeviceInfo {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  std::string name;            // "llvmpipe (LLVM 15.0.6, 256 bits)"
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  std::uint32_t api_version = 0;
  std::uint32_t driver_version = 0;
  std::uint32_t vendor_id = 0, device_id = 0;
  std::uint64_t device_local_bytes = 0;  // largest device-local heap
  std::uint32_t compute_queue_family = UINT32_MAX;
  std::uint32_t compute_queue_count = 0;  // queues in that family
  bool buffer_device_address = false;  // required
  bool shader_int64 = false;           // required
  bool storage_8bit = false;           // bool tensors need it
  bool storage_16bit = false;
  bool shader_float16 = false;
  bool shader_int8 = false;
  bool host_query_reset = false;
  // shaderSignedZeroInfNanPreserveFloat32: kernels can ask the driver to keep NaN, inf and -0.
  bool nan_preserve_f32 = false;
  // shaderFloat16 with RoundingModeRTE and DenormPreserve for 16-bit floats, settable apart from
  // 32-bit ones: f16 conversions by hardware that round as PyTorch does (vk_prelude.cpp).
  bool f16_conversions = false;
  // VK_NV_cooperative_matrix (with the Vulkan memory model its shaders use): tensor cores.
  bool coop_matrix_nv = false;
  // VK_KHR_cooperative_matrix with VK_NV_cooperative_matrix2's workgroup-scope matrices of
  // flexible dimensions (the driver stages their operands through shared memory).
  bool coop_matrix_workgroup = false;
  bool coop_matrix_tensor_loads = false;  // and its tensor addressing (OpCooperativeMatrixLoadTensorNV)
  bool coop_matrix_bf16 = false;          // and bfloat16 matrices (VK_KHR_shader_bfloat16)
  // VK_KHR_pipeline_executable_properties: the driver's statistics of a compiled kernel
  // (registers, shared memory, spills), logged with KILN_LOG=debug.
  bool executable_statistics = false;
  // Timestamps on the compute queue (0 valid bits: none), and nanoseconds per tick.
  std::uint32_t timestamp_valid_bits = 0;
  float timestamp_period_ns = 0;
  // A software device (lavapipe): its work runs on the host's own cores, so a thread waiting
  // for it should not poll, and the matmul autotuner leaves it alone.
  bool on_host_cores() const { return type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  bool usable() const;
  std::string why_unusable() const;
  const char* type_name() const;
};

// The process-wide instance, shared by its users and destroyed with the last (see get()). Throws kiln::Error when there is no loader
// or no driver (the engine then runs on the CPU only).
class Instance {
 public:
  static std::shared_ptr<Instance> get();
  ~Instance();
  VkInstance handle() const { return instance_; }
  const std::vector<PhysicalDeviceInfo>& devices() const { return devices_; }

  Instance();
 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  std::vector<PhysicalDeviceInfo> devices_;
};

// The index of the best device for "pick the best": the first discrete GPU, else integrated,
// else anything usable; -1 when none is usable.
int best_device_index(const std::vector<PhysicalDeviceInfo>& devices);

// Several kiln devices may share one Context (KILN_VULKAN_QUEUES): each submits through its own
// queue where the family has enough, else streams share queues round-robin. A VkQueue needs
// external synchronization, so submissions go through submit(), which locks the queue's mutex
// (uncontended when every stream has a queue of its own).
class Context {
 public:
  // Opens min(queues, the family's count) compute queues, at least one.
  Context(std::shared_ptr<Instance> instance, const PhysicalDeviceInfo& info, std::uint32_t queues = 1);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return info_.handle; }
  std::uint32_t queue_family() const { return info_.compute_queue_family; }
  std::uint32_t queue_count() const { return static_cast<std::uint32_t>(queues_.size()); }
  // The queue that stream `stream` submits to.
  std::uint32_t queue_of(std::uint32_t stream) const { return stream % queue_count(); }
  // vkQueueSubmit / vkQueueWaitIdle on stream `stream`'s queue, holding that queue's lock.
  VkResult submit(std::uint32_t stream, const VkSubmitInfo& si, VkFence fence) const;
  void wait_queue_idle(std::uint32_t stream) const;
  const PhysicalDeviceInfo& info() const { return info_; }
  const Instance& instance() const { return *instance_; }
  const VkPhysicalDeviceLimits& limits() const { return props_.limits; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }
  std::uint64_t max_allocation_bytes() const { return max_allocation_; }
  // Whether pipelines capture the driver's statistics: the device has them and debug logging
  // was on when the device opened (capturing may cost compile time).
  bool captures_statistics() const { return captures_statistics_; }

  // A memory type with all `required` flags among `type_bits`, preferring `preferred` too;
  // UINT32_MAX when none.
  std::uint32_t find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred = 0) const;

 private:
  std::shared_ptr<Instance> instance_;
  PhysicalDeviceInfo info_;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  std::uint64_t max_allocation_ = 0;
  bool captures_statistics_ = false;
  VkDevice device_ = VK_NULL_HANDLE;
  struct Queue {
    VkQueue handle = VK_NULL_HANDLE;
    mutable std::mutex mutex;
  };
  std::vector<std::unique_ptr<Queue>> queues_;
};

}  // namespace kiln::vk
