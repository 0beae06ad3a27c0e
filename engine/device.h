// Device: a value naming where a tensor lives. The CPU device always exists.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "kiln/engine/future.h"

namespace kiln {

enum class DeviceKind : std::uint8_t { cpu, vulkan };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device vulkan(int index = 0) { return {DeviceKind::vulkan, index}; }
  std::string str() const { return kind == DeviceKind::cpu ? "cpu" : "vulkan:" + std::to_string(index); }
  // Completes when every op submitted to this device before the call has run.
  Future<void> sync() const;
  friend bool operator==(const Device&, const Device&) = default;
};

// "cpu", "vulkan" (the first) or "vulkan:N", as str() writes them; nullopt for anything else.
std::optional<Device> parse_device(const std::string& text);

}  // namespace kiln
