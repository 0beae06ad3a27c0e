// Helpers of the Vulkan device suites: the device under test (or a skip when no Vulkan device
// exists at all), host data for every dtype, and comparison of a Vulkan result with the CPU's.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_context.h"
#include "kiln/engine/kiln.h"
#include "support/reference.h"

namespace kiln::test {

// Empty when the engine has a Vulkan device; otherwise why the test must skip (no device at
// all, or KILN_VULKAN=0). A device that exists but that the engine failed to open is an error.
std::string vulkan_unavailable_reason();

#define KILN_REQUIRE_VULKAN()                                         \
  do {                                                                \
    const std::string reason = ::kiln::test::vulkan_unavailable_reason(); \
    if (!reason.empty()) GTEST_SKIP() << reason;                      \
  } while (0)

inline Device vk0() { return Device::vulkan(0); }

// What the device vk0() opens (the instance's best) offers, for tests that need a feature of it
// (cooperative matrices) and report themselves skipped elsewhere. Call after KILN_REQUIRE_VULKAN.
inline vk::PhysicalDeviceInfo best_vulkan_device_info() {
  const auto instance = vk::Instance::get();
  const int best = vk::best_device_index(instance->devices());
  return best < 0 ? vk::PhysicalDeviceInfo{} : instance->devices()[static_cast<std::size_t>(best)];
}

struct Tol {
  double rtol = 0;  // 0 and 0: exact (NaN equals NaN)
  double atol = 0;
};

// Builds the same inputs on the CPU and on Vulkan, applies `fn` on both and compares.
::testing::AssertionResult same_as_cpu(const std::vector<std::function<Tensor(Device)>>& inputs,
                                       const std::function<Tensor(const std::vector<Tensor>&)>& fn, Tol tol);

inline ::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want, Tol tol) {
  return values_close(got, want, Tolerance{tol.rtol, tol.atol});
}

}  // namespace kiln::test
