// devices/vulkan private: the parts of VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2
// (and VK_KHR_shader_bfloat16) that kiln uses, declared here because Debian 12's Vulkan headers (1.3.239) predate both.
// Values and layouts are those of the Vulkan registry.
#pragma once
#include "kiln/devices/vulkan/vk_common.h"

namespace kiln::vk {

inline constexpr const char* kKhrCooperativeMatrixExtension = "VK_KHR_cooperative_matrix";
inline constexpr const char* kNvCooperativeMatrix2Extension = "VK_NV_cooperative_matrix2";
inline constexpr const char* kKhrShaderBfloat16Extension = "VK_KHR_shader_bfloat16";
inline constexpr auto kComponentTypeBfloat16 = static_cast<VkComponentTypeNV>(1000141000);

inline constexpr auto kStructureCoopFeaturesKhr = static_cast<VkStructureType>(1000506000);
inline constexpr auto kStructureCoop2FeaturesNv = static_cast<VkStructureType>(1000593000);
inline constexpr auto kStructureFlexibleDimensionsNv = static_cast<VkStructureType>(1000593001);
inline constexpr auto kStructureCoop2PropertiesNv = static_cast<VkStructureType>(1000593002);
inline constexpr auto kStructureBfloat16FeaturesKhr = static_cast<VkStructureType>(1000141000);

struct Bfloat16FeaturesKhr {  // VkPhysicalDeviceShaderBfloat16FeaturesKHR
  VkStructureType sType = kStructureBfloat16FeaturesKhr;
  void* pNext = nullptr;
  VkBool32 shaderBFloat16Type = VK_FALSE;
  VkBool32 shaderBFloat16DotProduct = VK_FALSE;
  VkBool32 shaderBFloat16CooperativeMatrix = VK_FALSE;
};

struct CoopFeaturesKhr {  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
  VkStructureType sType = kStructureCoopFeaturesKhr;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

struct Coop2FeaturesNv {  // VkPhysicalDeviceCooperativeMatrix2FeaturesNV
  VkStructureType sType = kStructureCoop2FeaturesNv;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrixWorkgroupScope = VK_FALSE;
  VkBool32 cooperativeMatrixFlexibleDimensions = VK_FALSE;
  VkBool32 cooperativeMatrixReductions = VK_FALSE;
  VkBool32 cooperativeMatrixConversions = VK_FALSE;
  VkBool32 cooperativeMatrixPerElementOperations = VK_FALSE;
  VkBool32 cooperativeMatrixTensorAddressing = VK_FALSE;
  VkBool32 cooperativeMatrixBlockLoads = VK_FALSE;
};

struct Coop2PropertiesNv {  // VkPhysicalDeviceCooperativeMatrix2PropertiesNV
  VkStructureType sType = kStructureCoop2PropertiesNv;
  void* pNext = nullptr;
  std::uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize = 0;
  std::uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension = 0;
  std::uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory = 0;
};

struct FlexibleDimensionsNv {  // VkCooperativeMatrixFlexibleDimensionsPropertiesNV
  VkStructureType sType = kStructureFlexibleDimensionsNv;
  void* pNext = nullptr;
  std::uint32_t MGranularity = 0, NGranularity = 0, KGranularity = 0;
  VkComponentTypeNV AType{}, BType{}, CType{}, ResultType{};
  VkBool32 saturatingAccumulation = VK_FALSE;
  VkScopeNV scope{};
  std::uint32_t workgroupInvocations = 0;
};

using PfnFlexibleDimensionsNv = VkResult(VKAPI_PTR*)(VkPhysicalDevice, std::uint32_t*, FlexibleDimensionsNv*);

}  // namespace kiln::vk
