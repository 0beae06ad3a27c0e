// devices/vulkan private: what the index kernels (vk_index_*.cpp) share — torch's view of ranks,
// and the range check of index values. A kernel that finds an index out of range skips that
// element (it never touches memory outside a tensor) and sets a flag of its own; the op's host
// function then waits for the flag and, when it is set, reads the index tensor back to name the
// first bad value in the same message as the CPU device. Waiting makes the error belong to the
// op's outputs, so every tensor computed from them fails with it (and nothing else does).
#pragma once
#include <cstdint>
#include <string>

#include "devices/shape_plans.h"
#include "devices/vulkan/vk_layout_copy.h"

namespace kiln::vk::index {

void gather_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void scatter_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void scatter_add_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void index_select_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void masked_fill_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void one_hot_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void sort_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void topk_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);


// The flag of one launch. Pass address() to the kernel, which stores 1u into U32s(address).v[0]
// for a bad index (GLSL: kiln_index_error(address)); then call one of the checks.
class RangeFlag {
 public:
  explicit RangeFlag(VulkanDevice& dev);
  std::uint64_t address() const;
  // Waits for the device; if the flag is set, throws naming op, the first index of `index` (an
  // i64 buffer of n elements) outside [0, size), dim and the op's input shapes.
  void check_index(const OpIr& op, const Buffer& index, std::int64_t n, int dim, std::int64_t size);
  // The same for one_hot: "class value v is out of range [0, classes)".
  void check_classes(const OpIr& op, const Buffer& index, std::int64_t n, std::int64_t classes);

 private:
  bool raised();
  std::int64_t first_bad(const Buffer& index, std::int64_t n, std::int64_t size);
  VulkanDevice& dev_;
  BufferPtr flag_;
};

// GLSL: void kiln_index_error(uint64_t flag) and bool kiln_in_range(int64_t v, uint size).
const char* glsl_index_check();

}  // namespace kiln::vk::index
