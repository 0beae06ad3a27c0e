// devices/vulkan private: compiling several kernels at once. The autotuner's first use of a
// shape class needs every candidate configuration's pipeline (14 or more); compiled one after
// another they cost seconds per class (SPIRV-Tools unrolls each matmul for about a second on one
// core, and the driver compiles it again), which made the first epoch of the main job on an
// H100 take 167 s against 1.2 s warm. Here they compile on up to one thread per core.
#pragma once
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_kernels.h"

namespace kiln::vk {

class VulkanDevice;

// A pipeline to make: what VulkanDevice::launch would ask the pipeline cache for.
struct KernelRequest {
  std::string key;
  const char* name = "";
  SourceFn source;
};

// Makes each request's pipeline (from memory, disk or glslang), on several threads; returns
// when all are done. A request that fails is left for its launch to raise, with its message.
// KILN_COMPILE_THREADS=n caps the threads (default: the cores, at most 16).
void compile_in_parallel(VulkanDevice& dev, const std::vector<KernelRequest>& requests);

}  // namespace kiln::vk
