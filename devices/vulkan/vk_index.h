// devices/vulkan private: what the index kernels (vk_index_*.cpp) share — torch's view of ranks,
// and the range check of index values. A kernel that finds an index out of range skips that
// element (it never touches memory outside a tensor) and marks a host flag record (see
// vk_host_flags.h) with the lowest position of a bad index. The op does not wait for it: the
// check goes to the executor (DeferredCheck), which keeps it with every value computed from the
// op's outputs and resolves it when one of them is read. A set flag then fails that read, and
// every later use of those values, with the first bad value in the same message as the CPU
// device — and nothing else fails. (Waiting for the flag right after each op, as kiln did
// before, stopped the GPU for every gather, scatter, index_select and one_hot.)
#pragma once
#include <cstdint>
#include <string>

#include "kiln/devices/shape_plans.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"

namespace kiln::vk::index {

void gather_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void scatter_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void scatter_add_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void index_select_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void masked_fill_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void one_hot_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void sort_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);
void topk_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);


// The range check of one launch. Pass address() to the kernel, which calls
// kiln_index_error(address, position) for a bad index at `position` of the index tensor (flat,
// in its contiguous layout); then hand the check on with one of the defer functions: to the
// executor through args.deferred or, where the caller takes no deferred check, by waiting for
// the device at once and throwing.
class RangeFlag {
 public:
  explicit RangeFlag(VulkanDevice& dev);
  ~RangeFlag();
  RangeFlag(const RangeFlag&) = delete;
  RangeFlag& operator=(const RangeFlag&) = delete;
  std::uint64_t address() const { return flag_.address; }
  // A bad value fails the op with "index v is out of range for dim `dim` of size `size`". The
  // index values are input `index_input` of the op, or `own_copy` where the kernel read a copy
  // of them (the output took the index's buffer).
  void defer_index(const OpIr& op, const KernelArgs& args, int index_input, BufferPtr own_copy, int dim,
                   std::int64_t size);
  // one_hot: "class value v is out of range [0, classes)"; the index values are input 0.
  void defer_classes(const OpIr& op, const KernelArgs& args, std::int64_t classes);

 private:
  void hand_on(std::unique_ptr<DeferredCheck> check, const KernelArgs& args);
  VulkanDevice& dev_;
  HostFlags::Handle flag_;
  bool handed_on_ = false;
};

// GLSL: void kiln_index_error(uint64_t flag, uint position) and bool kiln_in_range(int64_t v, uint size).
const char* glsl_index_check();

}  // namespace kiln::vk::index
