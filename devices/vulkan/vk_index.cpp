// Index kernels on Vulkan: registration, torch's view of ranks and the range check of index
// values that the index_*.cpp kernels share (see vk_index.h for why the check waits).
#include "devices/vulkan/vk_index.h"

#include <vector>

#include "ops/registry.h"

namespace kiln::vk {

namespace index {

RangeFlag::RangeFlag(VulkanDevice& dev) : dev_(dev), flag_(dev.memory().allocate(4)) {
  const std::uint32_t zero = 0;
  dev_.write(*flag_, &zero, sizeof zero);
}

std::uint64_t RangeFlag::address() const { return VulkanDevice::address(*flag_); }

bool RangeFlag::raised() {
  std::uint32_t v = 0;
  dev_.read(*flag_, &v, sizeof v);
  return v != 0;
}

std::int64_t RangeFlag::first_bad(const Buffer& index, std::int64_t n, std::int64_t size) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(n));
  dev_.read(index, values.data(), values.size() * sizeof(std::int64_t));
  for (std::int64_t v : values)
    if (v < 0 || v >= size) return v;
  return size;  // not reached: the kernel saw one
}

void RangeFlag::check_index(const OpIr& op, const Buffer& index, std::int64_t n, int dim, std::int64_t size) {
  if (!raised()) return;
  throw_index_out_of_range(op, first_bad(index, n, size), dim, size);
}

void RangeFlag::check_classes(const OpIr& op, const Buffer& index, std::int64_t n, std::int64_t classes) {
  if (!raised()) return;
  const std::int64_t value = first_bad(index, n, classes);
  throw Error(op_name(op.kind), "class value " + std::to_string(value) + " is out of range [0, " +
                                    std::to_string(classes) + ") (indices " + describe(op.inputs[0]) + ")");
}

const char* glsl_index_check() {
  return R"(
void kiln_index_error(uint64_t flag) { U32s(flag).v[0] = 1u; }
bool kiln_in_range(int64_t v, uint size) { return uint64_t(v) < uint64_t(size); }
)";
}

}  // namespace index

void register_index_kernels(KernelTable& t) {
  t.set(OpKind::gather, index::gather_kernel);
  t.set(OpKind::scatter, index::scatter_kernel);
  t.set(OpKind::scatter_add, index::scatter_add_kernel);
  t.set(OpKind::index_select, index::index_select_kernel);
  t.set(OpKind::masked_fill, index::masked_fill_kernel);
  t.set(OpKind::one_hot, index::one_hot_kernel);
  t.set(OpKind::sort, index::sort_kernel);
  t.set(OpKind::topk, index::topk_kernel);
}

}  // namespace kiln::vk
