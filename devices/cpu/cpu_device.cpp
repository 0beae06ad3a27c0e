// The CPU device: aligned host memory through the pool, kernels from the kernel table.
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/fused_anchor.h"
#include "kiln/devices/cpu/fused_program.h"
#include "kiln/devices/cpu/packed_weights.h"

namespace kiln {
namespace {

class AlignedHostAllocator final : public RawAllocator {
 public:
  Block allocate(std::size_t bytes) override {
    // 64-byte alignment: a cache line, and a full AVX-512 vector.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw OutOfMemory(bytes);
    return Block{p, 0, bytes};
  }
  void release(const Block& block) override { std::free(block.ptr); }
};

cpu::KernelTable build_kernel_table() {
  cpu::KernelTable t;
  cpu::register_creation_kernels(t);
  cpu::register_elementwise_kernels(t);
  cpu::register_reduce_kernels(t);
  cpu::register_linalg_kernels(t);
  cpu::register_layout_kernels(t);
  cpu::register_conv_kernels(t);
  cpu::register_pool_kernels(t);
  cpu::register_index_kernels(t);
  cpu::register_norm_kernels(t);
  return t;
}

class CpuDevice final : public DeviceBackend {
 public:
  CpuDevice() : pool_(std::make_unique<AlignedHostAllocator>()), kernels_(build_kernel_table()) {
    info_.name = "cpu";
    info_.kind = "cpu";
    info_.type = "cpu";
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    info_.memory_bytes = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
    info_.on_host_cores = true;
    info_.concurrent_kernels = true;
    // Every op has a CPU kernel (capabilities_.ops: all of them, pooling and its gradients
    // included); the matmul kernel reads either operand transposed (BLAS flags).
    capabilities_.matmul_transposed = DTypeSet{DType::f32};
  }
  const DeviceInfo& info() const override { return info_; }
  MemoryPool& memory() override { return pool_; }
  void write(Buffer& dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst.data(), src, bytes);
  }
  void read(const Buffer& src, void* dst, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src.data(), bytes);
  }
  void run(const OpIr& op, const KernelArgs& args) override {
    const cpu::Kernel k = kernels_[op.kind];
    KILN_CHECK(k != nullptr, op_name(op.kind), "no CPU kernel for this op");
    k(op, args);
  }
  std::shared_ptr<CompiledKernel> compile_fused(const FusedExpr& expr) override {
    if (expr.anchored()) return std::make_shared<cpu::AnchoredProgram>(expr);
    return std::make_shared<cpu::FusedProgram>(expr);
  }
  void run_fused(const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args) override {
    if (expr.anchored()) static_cast<const cpu::AnchoredProgram&>(kernel).run(expr, args, pool_, kernels_);
    else static_cast<const cpu::FusedProgram&>(kernel).run(expr, args);
  }
  void synchronize() override {}
  std::uint64_t weights_packed() const override { return cpu::packed_weight_count(); }

 private:
  DeviceInfo info_;
  MemoryPool pool_;
  cpu::KernelTable kernels_;
};

}  // namespace

std::unique_ptr<DeviceBackend> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace kiln
