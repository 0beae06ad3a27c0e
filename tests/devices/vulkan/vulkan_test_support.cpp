#include "vulkan_test_support.h"

#include <cmath>
#include <cstdlib>

#include "kiln/devices/vulkan/vk_context.h"

namespace kiln::test {

std::string vulkan_unavailable_reason() {
  for (const Device& d : devices())
    if (d.kind == DeviceKind::vulkan) return {};
  if (const char* env = std::getenv("KILN_VULKAN"); env && std::string(env) == "0") return "KILN_VULKAN=0";
  try {
    for (const auto& d : vk::Instance::get()->devices())
      if (d.usable()) {
        ADD_FAILURE() << "Vulkan device " << d.name << " exists but the engine did not open it";
        return "engine failed to open Vulkan";
      }
    return "no usable Vulkan device (Vulkan 1.2 with bufferDeviceAddress and shaderInt64)";
  } catch (const std::exception& e) {
    return std::string("no Vulkan driver: ") + e.what();
  }
}

::testing::AssertionResult same_as_cpu(const std::vector<std::function<Tensor(Device)>>& inputs,
                                       const std::function<Tensor(const std::vector<Tensor>&)>& fn, Tol tol) {
  std::vector<Tensor> on_cpu, on_vk;
  for (const auto& make : inputs) {
    on_cpu.push_back(make(Device::cpu()));
    on_vk.push_back(make(Device::vulkan(0)));
  }
  const Tensor want = fn(on_cpu);
  const Tensor got = fn(on_vk);
  if (got.device() != Device::vulkan(0)) return ::testing::AssertionFailure() << "result is on " << got.device().str();
  if (got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << ", CPU gives " << dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape().str() << ", CPU gives " << want.shape().str();
  return values_close(host_values(got), host_values(want), Tolerance{tol.rtol, tol.atol});
}

}  // namespace kiln::test
