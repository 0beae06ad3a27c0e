#include "vulkan_test_support.h"

#include <cmath>
#include <cstdlib>

#include "devices/vulkan/vk_context.h"

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

std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  switch (t.dtype()) {
    case DType::f32:
      for (float x : t.to_vector<float>().get()) out.push_back(x);
      break;
    case DType::i64:
      for (auto x : t.to_vector<std::int64_t>().get()) out.push_back(static_cast<double>(x));
      break;
    case DType::bool_:
      for (bool x : t.to_vector<bool>().get()) out.push_back(x ? 1.0 : 0.0);
      break;
    default: throw std::runtime_error("unsupported dtype");
  }
  return out;
}

::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want, Tol tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  int bad = 0;
  std::string report;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else ok = std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
    if (!ok && ++bad <= 6) {
      char buf[128];
      std::snprintf(buf, sizeof buf, " [%zu] got %.9g want %.9g", i, g, w);
      report += buf;
    }
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " values differ:" << report;
  return ::testing::AssertionSuccess();
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
  return close(values(got), values(want), tol);
}

}  // namespace kiln::test
