// devices/vulkan private: the Vulkan headers, result checking and the RAII holder every Vulkan
// object lives in. Only devices/vulkan/*.cpp include this; nothing outside devices/ sees it.
#pragma once
#include <vulkan/vulkan.h>

// Vulkan structs are written `VkFooInfo info{VK_STRUCTURE_TYPE_FOO_INFO};`: the rest is zero.
// Here rather than as a per-file compile option, which would keep these files out of unity
// builds (./dev).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <string>
#include <utility>

#include "kiln/base/error.h"

namespace kiln::vk {

// The error a lost device raises; the device stays unusable afterwards and every later op on
// it fails with the same message, while the other devices keep running.
class DeviceLost : public Error {
 public:
  explicit DeviceLost(const std::string& what) : Error("vulkan", "device lost during " + what) {}
};

const char* result_name(VkResult r);

// Throws OutOfMemory for allocation failures, DeviceLost for VK_ERROR_DEVICE_LOST and
// kiln::Error("vulkan", ...) for the rest. `what` names the call ("vkQueueSubmit").
void throw_result(VkResult r, const char* what);
inline void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw_result(r, what);
}

// Owns one Vulkan handle; `destroy` runs on reset and destruction. Move-only.
template <class T> class Owned {
 public:
  using Destroy = void (*)(VkDevice, T);
  Owned() = default;
  Owned(VkDevice device, T handle, Destroy destroy) : device_(device), handle_(handle), destroy_(destroy) {}
  Owned(Owned&& o) noexcept { *this = std::move(o); }
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      handle_ = std::exchange(o.handle_, T{});
      destroy_ = o.destroy_;
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(); }

  void reset() {
    if (handle_ != T{}) destroy_(device_, std::exchange(handle_, T{}));
  }
  T get() const { return handle_; }
  explicit operator bool() const { return handle_ != T{}; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  T handle_{};
  Destroy destroy_ = nullptr;
};

// The destroy functions take an allocator argument; these adapters drop it.
#define KILN_VK_DESTROYER(Type, fn) \
  inline void destroy(VkDevice d, Type h) { fn(d, h, nullptr); }
KILN_VK_DESTROYER(VkBuffer, vkDestroyBuffer)
KILN_VK_DESTROYER(VkDeviceMemory, vkFreeMemory)
KILN_VK_DESTROYER(VkFence, vkDestroyFence)
KILN_VK_DESTROYER(VkQueryPool, vkDestroyQueryPool)
KILN_VK_DESTROYER(VkCommandPool, vkDestroyCommandPool)
KILN_VK_DESTROYER(VkPipeline, vkDestroyPipeline)
KILN_VK_DESTROYER(VkPipelineLayout, vkDestroyPipelineLayout)
KILN_VK_DESTROYER(VkPipelineCache, vkDestroyPipelineCache)
KILN_VK_DESTROYER(VkShaderModule, vkDestroyShaderModule)
#undef KILN_VK_DESTROYER

template <class T> Owned<T> own(VkDevice d, T h) {
  return Owned<T>(d, h, static_cast<void (*)(VkDevice, T)>(&destroy));
}

}  // namespace kiln::vk
