// devices/vulkan private: the Vulkan device behind DeviceBackend, one per stream of a GPU. It
// shares the context and the pipeline cache with the GPU's other streams and owns the
// memory pool (over DeviceAllocator), the command stream, a device-side
// error flag and the host flag records of index checks; kernels (vk_kernels.h) run through
// launch()/dispatch(). Only the device's scheduler thread calls it, except memory() and the
// pipeline cache, which lock.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>

#include "kiln/devices/vulkan/vk_commands.h"
#include "kiln/devices/vulkan/vk_host_flags.h"
#include "kiln/devices/vulkan/vk_kernels.h"
#include "kiln/devices/vulkan/vk_parallel_compile.h"
#include "kiln/devices/vulkan/vk_pipeline_cache.h"

namespace kiln::vk {

class VulkanDevice final : public DeviceBackend {
 public:
  // Opens the GPU with `streams` compute queues (as many as its family has) and is its first
  // stream; the others are made from it with the constructor below.
  VulkanDevice(std::shared_ptr<Instance> instance, const PhysicalDeviceInfo& info, int index,
               std::string cache_dir = {}, std::uint32_t streams = 1);
  // Stream `stream` of first's GPU: a kiln device with a command stream, memory pool and host
  // flags of its own, sharing the VkDevice, the queues (Context::queue_of), the pipelines and the
  // matmul autotuner's choices.
  VulkanDevice(const VulkanDevice& first, std::uint32_t stream, int index);
  ~VulkanDevice() override;

  const DeviceInfo& info() const override { return info_; }
  MemoryPool& memory() override { return *pool_; }
  void write(Buffer& dst, const void* src, std::size_t bytes) override;
  void read(const Buffer& src, void* dst, std::size_t bytes) override;
  void run(const OpIr& op, const KernelArgs& args) override;
  std::shared_ptr<CompiledKernel> compile_fused(const FusedExpr& expr) override;
  bool compiles_kernels() const override { return true; }
  void precompile_fused(std::span<const FusedExpr> exprs) override;
  void run_fused(const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args) override;
  void synchronize() override;
  void flush() override;
  std::uint64_t busy_ns() const override { return commands_->busy_ns(); }
  std::uint64_t full_waits() const override { return commands_->finishes(); }
  std::uint64_t staged_transfers() const override { return staged_transfers_.load(std::memory_order_relaxed); }
  void set_timing(bool enabled) override { commands_->set_timing(enabled); }
  const void* memory_domain() const override { return ctx_.get(); }
  void copy_from_peer(const Buffer& src, Buffer& dst, std::size_t bytes, std::shared_ptr<void> keep) override;

  // Kernels dispatched between begin_raising() and end_raising() raise their errors (kiln_raise)
  // into a host flag record of their own (vk_host_flags.h) instead of the device-wide flag;
  // the returned check, handed on through KernelArgs::deferred, reports them for the values
  // computed from that op and nothing else. `outputs`: the outputs those errors reach (as
  // DeferredCheck::outputs).
  std::unique_ptr<DeferredCheck> begin_raising(std::uint64_t outputs);
  void end_raising() { error_record_ = 0; }

  // ---- the kernel API (vk_kernels.h) ----
  // Compiles (or finds) the kernel `key` and records one dispatch of it.
  void launch(const std::string& key, const char* name, const SourceFn& source, const LaunchArgs& args, Groups groups);
  // The same in two steps, for callers that keep the pipeline (fused kernels).
  const Pipeline& pipeline(const std::string& key, const char* name, const SourceFn& source);
  void dispatch(const Pipeline& pipeline, const LaunchArgs& args, Groups groups);
  // An unfused elementwise op, through the fused code generator (a one-node expression).
  void run_elementwise(const OpIr& op, const KernelArgs& args);
  // Copies between device buffers (recorded like a dispatch).
  void copy(const Buffer& src, const Buffer& dst, std::size_t bytes);
  static std::uint64_t address(const Buffer& b);

  const Context& context() const { return *ctx_; }
  // Records kernels mark to report what only they can see (vk_host_flags.h).
  HostFlags& host_flags() { return *flags_; }
  PipelineCache& pipelines() { return *pipelines_; }
  BackgroundCompiler& background_compiler() { return *background_; }
  const std::string& prelude() const { return prelude_; }

 private:
  VulkanDevice(std::shared_ptr<Context> context, std::shared_ptr<PipelineCache> pipelines, std::uint32_t stream,
               std::uint32_t streams, int index, std::string cache_dir);
  // Throws the error a kernel raised through kiln_raise (after the work completed).
  void check_error_flag();

  DeviceInfo info_;
  std::shared_ptr<Context> ctx_;
  std::uint32_t streams_ = 1;
  std::unique_ptr<CommandStream> commands_;
  std::unique_ptr<HostFlags> flags_;
  std::shared_ptr<PipelineCache> pipelines_;
  BufferAllocation error_flag_;
  VkDeviceAddress error_record_ = 0;  // where kernels raise errors now, when not error_flag_
  std::unique_ptr<MemoryPool> pool_;
  KernelTable kernels_;
  std::string prelude_;
  // One-node expressions of unfused elementwise ops, by structure key.
  std::unordered_map<std::string, std::shared_ptr<CompiledKernel>> single_ops_;
  // One memory for host and device (integrated GPU, lavapipe): reads and uploads copy straight
  // between the host and the tensor's mapped memory where they can (read/write).
  bool unified_memory_ = false;
  std::atomic<std::uint64_t> staged_transfers_{0};
  // Last: destroyed first, so no background compile outlives what it reads.
  std::unique_ptr<BackgroundCompiler> background_;
};

}  // namespace kiln::vk
