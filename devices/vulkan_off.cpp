// Built instead of devices/vulkan/ when CMake's KILN_VULKAN option is OFF.
#include "kiln/devices/device.h"

namespace kiln {

std::vector<std::unique_ptr<DeviceBackend>> make_vulkan_devices(std::uint32_t) { return {}; }

}  // namespace kiln
