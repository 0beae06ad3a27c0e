// Index kernels on Vulkan: registration, torch's view of ranks and the range check of index
// values that the index_*.cpp kernels share (see vk_index.h for why the check is deferred).
#include "kiln/devices/vulkan/vk_index.h"

#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace index {

namespace {

// What a RangeFlag becomes once its kernel is recorded: resolved after the device ran it.
class IndexCheck final : public DeferredCheck {
 public:
  // `index`: the index values (an op input that the executor keeps, or `own_copy`); `dim` < 0
  // words the error as one_hot's class value.
  IndexCheck(VulkanDevice& dev, HostFlags::Handle flag, const OpIr& op, const Buffer* index, BufferPtr own_copy,
             std::int64_t count, int dim, std::int64_t size)
      : dev_(dev), flag_(flag), index_(index), own_copy_(std::move(own_copy)), count_(count), dim_(dim), size_(size) {
    op_.kind = op.kind;
    op_.inputs = op.inputs;
  }
  ~IndexCheck() override { dev_.host_flags().release(flag_.index); }

  std::exception_ptr resolve() override {
    if (!flag_.host->raised) return nullptr;
    // The bad value is still at its position: the kernel skipped it (an output written over
    // the index's buffer keeps it), and nothing has written that buffer since.
    const std::uint32_t position = flag_.host->position;
    if (position >= count_)  // a kernel that marks the flag records a position: not expected
      return std::make_exception_ptr(Error(op_name(op_.kind), "an index is out of range"));
    std::vector<std::int64_t> values(static_cast<std::size_t>(position) + 1);
    dev_.read(*index_, values.data(), values.size() * sizeof(std::int64_t));
    const std::int64_t value = values.back();
    try {
      if (dim_ >= 0) throw_index_out_of_range(op_, value, dim_, size_);
      throw Error(op_name(op_.kind), "class value " + std::to_string(value) + " is out of range [0, " +
                                         std::to_string(size_) + ") (indices " + describe(op_.inputs[0]) + ")");
    } catch (...) {
      return std::current_exception();
    }
  }

 private:
  VulkanDevice& dev_;
  HostFlags::Handle flag_;
  OpIr op_;  // kind and inputs, for the message
  const Buffer* index_;
  BufferPtr own_copy_;
  std::int64_t count_;  // index values
  int dim_;
  std::int64_t size_;
};

}  // namespace

RangeFlag::RangeFlag(VulkanDevice& dev) : dev_(dev), flag_(dev.host_flags().take()) {}

RangeFlag::~RangeFlag() {
  if (!handed_on_) dev_.host_flags().release(flag_.index);  // the launch failed
}

void RangeFlag::hand_on(std::unique_ptr<DeferredCheck> check, const KernelArgs& args) {
  handed_on_ = true;  // the check releases the record now
  if (args.deferred) {
    *args.deferred = std::move(check);
    return;
  }
  dev_.synchronize();
  if (std::exception_ptr error = check->resolve()) std::rethrow_exception(error);
}

void RangeFlag::defer_index(const OpIr& op, const KernelArgs& args, int index_input, BufferPtr own_copy, int dim,
                            std::int64_t size) {
  const bool copied = own_copy != nullptr;
  const Buffer* index = copied ? own_copy.get() : args.inputs[static_cast<std::size_t>(index_input)];
  const std::int64_t count = op.inputs[static_cast<std::size_t>(index_input)].numel();
  auto check = std::make_unique<IndexCheck>(dev_, flag_, op, index, std::move(own_copy), count, dim, size);
  if (!copied) check->keep_input = index_input;
  hand_on(std::move(check), args);
}

void RangeFlag::defer_classes(const OpIr& op, const KernelArgs& args, std::int64_t classes) {
  auto check =
      std::make_unique<IndexCheck>(dev_, flag_, op, args.inputs[0], nullptr, op.inputs[0].numel(), -1, classes);
  check->keep_input = 0;
  hand_on(std::move(check), args);
}

const char* glsl_index_check() {
  return R"(
void kiln_index_error(uint64_t flag, uint position) {
  U32s(flag).v[0] = 1u;
  atomicMin(U32s(flag).v[1], position);
}
bool kiln_in_range(int64_t v, uint size) { return uint64_t(v) < uint64_t(size); }
)";
}

}  // namespace index

void register_index_kernels(KernelTable& t) {
  // The table every device shares (devices/kernel_tables.def).
#define KILN_INDEX_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::vk
