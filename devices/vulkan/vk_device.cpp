#include "kiln/devices/vulkan/vk_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kiln/base/log.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

VulkanDevice::VulkanDevice(std::shared_ptr<Instance> instance, const PhysicalDeviceInfo& pinfo, int index,
                           std::string cache_dir, std::uint32_t streams)
    : VulkanDevice(std::make_shared<Context>(std::move(instance), pinfo, streams), nullptr, 0, streams, index,
                   std::move(cache_dir)) {}

VulkanDevice::VulkanDevice(const VulkanDevice& first, std::uint32_t stream, int index)
    : VulkanDevice(first.ctx_, first.pipelines_, stream, first.streams_, index, {}) {}

VulkanDevice::VulkanDevice(std::shared_ptr<Context> context, std::shared_ptr<PipelineCache> pipelines,
                           std::uint32_t stream, std::uint32_t streams, int index, std::string cache_dir)
    : ctx_(std::move(context)), streams_(streams) {
  const PhysicalDeviceInfo& pinfo = ctx_->info();
  info_.name = "vulkan:" + std::to_string(index) + " (" + pinfo.name;
  if (streams > 1)
    info_.name += ", stream " + std::to_string(stream + 1) + " of " + std::to_string(streams) + " on queue " +
                  std::to_string(ctx_->queue_of(stream));
  info_.name += ")";
  info_.kind = "vulkan";
  info_.type = pinfo.on_host_cores() ? "software" : pinfo.type_name();  // lavapipe: not the CPU device
  info_.memory_bytes = pinfo.device_local_bytes;
  info_.on_host_cores = pinfo.on_host_cores();
  unified_memory_ = pinfo.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || pinfo.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  commands_ = std::make_unique<CommandStream>(*ctx_, stream);
  flags_ = std::make_unique<HostFlags>(*ctx_);
  pipelines_ = pipelines ? std::move(pipelines) : std::make_shared<PipelineCache>(*ctx_, std::move(cache_dir));
  background_ = std::make_unique<BackgroundCompiler>(pipelines_);
  error_flag_ = allocate_buffer(*ctx_, 16, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  std::memset(error_flag_.mapped, 0, 16);
  auto allocator = std::make_unique<DeviceAllocator>(*ctx_);
  allocator->set_wait_idle([this] { commands_->finish(); });
  pool_ = std::make_unique<MemoryPool>(std::move(allocator));
  register_creation_kernels(kernels_);
  register_elementwise_kernels(kernels_);
  register_reduce_kernels(kernels_);
  register_layout_kernels(kernels_);
  register_conv_kernels(kernels_);
  register_pool_kernels(kernels_);
  register_index_kernels(kernels_);
  register_linalg_kernels(kernels_);
  prelude_ = kernel_prelude(*this);
  // Every op runs natively (capabilities_.ops: all, pooling and its gradients included, in each
  // float dtype the device holds). f16 and bf16 are 16-bit words converted with bit
  // arithmetic: 16-bit storage is enough.
  if (pinfo.storage_16bit) capabilities_.dtypes.add(DType::f16).add(DType::bf16);
  capabilities_.matmul_transposed = transposed_matmul_dtypes(*this);
  // Batch norm in training mode has CPU kernels only: here it runs as its decomposition into
  // reductions and elementwise ops (ops/decompositions.h).
  for (OpKind k : {OpKind::batch_norm, OpKind::batch_norm_backward})
    capabilities_.ops.reset(static_cast<std::size_t>(k));
}

VulkanDevice::~VulkanDevice() {
  background_.reset();  // waits for a compile under way
  try {
    commands_->finish();
  } catch (...) {
    // A lost device: its memory goes away with it.
  }
  single_ops_.clear();
  pool_.reset();  // before the context: chunks are VkDeviceMemory
}

std::uint64_t VulkanDevice::address(const Buffer& b) { return DeviceAllocator::address_of(b.block()); }

// Where the tensor's memory is mapped (one memory for host and device) and the device has finished
// all it was given, the host copies straight into it: no staging buffer, no copy on the device.
// Not while work is in flight: dst's block may have been freed by a tensor that a submitted
// kernel still reads or writes, which the device's own barriers order and the host's copy would not.
void VulkanDevice::write(Buffer& dst, const void* src, std::size_t bytes) {
  if (!bytes) return;
  if (std::byte* mapped = unified_memory_ ? DeviceAllocator::mapped_of(dst.block()) : nullptr;
      mapped != nullptr && commands_->idle()) {
    std::memcpy(mapped, src, bytes);
    return;
  }
  ++staged_transfers_;
  const HostSlice staging = commands_->host_alloc(bytes);
  std::memcpy(staging.ptr, src, bytes);
  VkCommandBuffer cb = commands_->begin_command();
  VkBufferCopy region{staging.offset, dst.block().offset, bytes};
  vkCmdCopyBuffer(cb, staging.buffer, DeviceAllocator::buffer_of(dst.block()), 1, &region);
  commands_->done_command();
}

// The source's stream waited for its writes before handing `src` over (Executor::run_read),
// so a copy on this stream's queue reads them; the queues are of one family, so the buffer
// needs no ownership transfer.
void VulkanDevice::copy_from_peer(const Buffer& src, Buffer& dst, std::size_t bytes, std::shared_ptr<void> keep) {
  if (!bytes) return;
  VkCommandBuffer cb = commands_->begin_command();
  VkBufferCopy region{src.block().offset, dst.block().offset, bytes};
  vkCmdCopyBuffer(cb, DeviceAllocator::buffer_of(src.block()), DeviceAllocator::buffer_of(dst.block()), 1, &region);
  commands_->retain(std::move(keep));
  commands_->done_command();
}

// A read waits for the device in any case; where src's memory is mapped, the host then copies
// straight out of it (the submission's last barrier made the device's writes visible to the host).
void VulkanDevice::read(const Buffer& src, void* dst, std::size_t bytes) {
  if (!bytes) return synchronize();
  if (const std::byte* mapped = unified_memory_ ? DeviceAllocator::mapped_of(src.block()) : nullptr) {
    commands_->finish([&] { std::memcpy(dst, mapped, bytes); });
    flags_->recycle();
    check_error_flag();
    return;
  }
  ++staged_transfers_;
  const HostSlice staging = commands_->host_alloc(bytes);
  VkCommandBuffer cb = commands_->begin_command();
  VkBufferCopy region{src.block().offset, staging.offset, bytes};
  vkCmdCopyBuffer(cb, DeviceAllocator::buffer_of(src.block()), staging.buffer, 1, &region);
  commands_->done_command();
  // The copy out happens while the device is idle and before finish() recycles the staging
  // memory (it hands large blocks back to the driver).
  commands_->finish([&] { std::memcpy(dst, staging.ptr, bytes); });
  flags_->recycle();
  check_error_flag();
}

void VulkanDevice::copy(const Buffer& src, const Buffer& dst, std::size_t bytes) {
  if (!bytes) return;
  VkCommandBuffer cb = commands_->begin_command();
  VkBufferCopy region{src.block().offset, dst.block().offset, bytes};
  vkCmdCopyBuffer(cb, DeviceAllocator::buffer_of(src.block()), DeviceAllocator::buffer_of(dst.block()), 1, &region);
  commands_->done_command();
}

void VulkanDevice::synchronize() {
  commands_->finish();
  flags_->recycle();
  check_error_flag();
}

void VulkanDevice::flush() { commands_->submit(); }

namespace {

// The error of a code a kernel raised: 1 + the OpKind of the op (the only device-side error so
// far is an i64 remainder by zero).
Error kernel_error(std::uint32_t code, const std::string& device) {
  if (code - 1 < kOpCount)
    return Error(op_name(static_cast<OpKind>(code - 1)), "integer division by zero (an i64 divisor is 0) on " + device);
  return Error("vulkan", "a kernel reported error code " + std::to_string(code));
}

// An op's kernels raised into a record of their own: resolved once the device has run them.
class RaiseCheck final : public DeferredCheck {
 public:
  RaiseCheck(VulkanDevice& dev, HostFlags::Handle record) : dev_(dev), record_(record) {}
  ~RaiseCheck() override { dev_.host_flags().release(record_.index); }
  std::exception_ptr resolve() override {
    const std::uint32_t code = record_.host->raised;
    return code ? std::make_exception_ptr(kernel_error(code, dev_.info().name)) : nullptr;
  }

 private:
  VulkanDevice& dev_;
  HostFlags::Handle record_;
};

}  // namespace

void VulkanDevice::check_error_flag() {
  auto* flag = static_cast<std::uint32_t*>(error_flag_.mapped);
  const std::uint32_t code = flag[0];
  if (!code) return;
  flag[0] = 0;
  throw kernel_error(code, info_.name);
}

std::unique_ptr<DeferredCheck> VulkanDevice::begin_raising(std::uint64_t outputs) {
  const HostFlags::Handle record = flags_->take();
  auto check = std::make_unique<RaiseCheck>(*this, record);  // releases the record
  check->outputs = outputs;
  error_record_ = record.address;
  return check;
}

const Pipeline& VulkanDevice::pipeline(const std::string& key, const char* name, const SourceFn& source) {
  return pipelines_->get(key, name, source);
}

void VulkanDevice::dispatch(const Pipeline& p, const LaunchArgs& args, Groups groups) {
  if (!groups[0] || !groups[1] || !groups[2]) return;
  PushConstants push;
  push.error_flag = error_record_ ? error_record_ : error_flag_.address;
  const std::size_t inline_words = std::min(args.size(), kPushWords);
  if (inline_words) std::memcpy(push.words, args.words().data(), inline_words * 8);
  if (args.size() > kPushWords) {
    const std::size_t rest = args.size() - kPushWords;
    const HostSlice block = commands_->host_alloc(rest * 8, 8);
    std::memcpy(block.ptr, args.words().data() + kPushWords, rest * 8);
    push.args = block.address;
  }
  VkCommandBuffer cb = commands_->begin_command();
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline.get());
  vkCmdPushConstants(cb, pipelines_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
  vkCmdDispatch(cb, groups[0], groups[1], groups[2]);
  commands_->done_command();
}

void VulkanDevice::launch(const std::string& key, const char* name, const SourceFn& source, const LaunchArgs& args,
                          Groups groups) {
  dispatch(pipeline(key, name, source), args, groups);
}

void VulkanDevice::run(const OpIr& op, const KernelArgs& args) {
  commands_->check_alive();
  const Kernel k = kernels_[op.kind];
  KILN_CHECK(k != nullptr, op_name(op.kind), "no Vulkan kernel for this op yet (" + info_.name + ")");
  k(*this, op, args);
}

// ---- the kernel API helpers (vk_kernels.h) ----

LaunchArgs& LaunchArgs::buffer(const Buffer& b) { return push(VulkanDevice::address(b)); }

LaunchArgs& LaunchArgs::scalar(double v, DType dtype) {
  switch (dtype) {
    case DType::f32:
    // f16 and bf16 math runs in f32 (vk_fused_glsl.cpp): the scalar is an f32, not rounded to
    // 16 bits, as PyTorch's CUDA kernels take it.
    case DType::f16:
    case DType::bf16: return f32(static_cast<float>(v));
    case DType::i64: return i64(static_cast<std::int64_t>(v));
    case DType::bool_: return u64(v != 0.0 ? 1 : 0);
    default: throw Error("vulkan", std::string("no scalar argument of dtype ") + dtype_name(dtype));
  }
}

Groups groups_for(std::uint64_t n, std::uint32_t local) {
  const std::uint64_t g = std::min<std::uint64_t>((n + local - 1) / local, 65535);
  return {static_cast<std::uint32_t>(g), 1, 1};
}

const char* glsl_value_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::i64: return "int64_t";
    case DType::bool_: return "bool";
    case DType::f16:
    case DType::bf16: return "float";  // held as f32, stored as 16-bit words (see vk_prelude.cpp)
    default: throw Error("vulkan", std::string("dtype ") + dtype_name(t) + " is not supported by Vulkan kernels yet");
  }
}

const char* glsl_pointer_type(DType t) {
  switch (t) {
    case DType::f32: return "F32s";
    case DType::i64: return "I64s";
    case DType::bool_: return "U8s";
    case DType::f16:
    case DType::bf16: return "U16s";
    default: throw Error("vulkan", std::string("dtype ") + dtype_name(t) + " is not supported by Vulkan kernels yet");
  }
}

std::string glsl_load(DType t, const std::string& ptr, const std::string& index) {
  const std::string e = ptr + ".v[" + index + "]";
  // Bools are bytes; 8-bit storage without 8-bit arithmetic (shaderInt8) is enough.
  if (t == DType::bool_) return "(uint(" + e + ") != 0u)";
  if (t == DType::f16) return "kiln_f16_to_f32(uint(" + e + "))";
  if (t == DType::bf16) return "kiln_bf16_to_f32(uint(" + e + "))";
  return e;
}

std::string glsl_store(DType t, const std::string& ptr, const std::string& index, const std::string& value) {
  const std::string e = ptr + ".v[" + index + "] = ";
  if (t == DType::bool_) return e + "uint8_t((" + value + ") ? 1u : 0u);";
  if (t == DType::f16) return e + "uint16_t(kiln_f32_to_f16(" + value + "));";
  if (t == DType::bf16) return e + "uint16_t(kiln_f32_to_bf16(" + value + "));";
  return e + value + ";";
}

std::size_t vector4_bytes(DType t) {
  if (t == DType::f32) return 16;
  return is_half(t) ? 8 : 0;
}

std::string glsl_load4(DType t, const std::string& address, const std::string& q) {
  if (!is_half(t)) return "F32x4s(" + address + ").v[" + q + "]";
  return "kiln_unpack4(U16x4s(" + address + ").v[" + q + "], " + (t == DType::f16 ? "true" : "false") + ")";
}

std::string glsl_store4(DType t, const std::string& address, const std::string& q, const std::string& v) {
  if (!is_half(t)) return "F32x4s(" + address + ").v[" + q + "] = " + v + ";";
  return "U16x4s(" + address + ").v[" + q + "] = kiln_pack4(" + v + ", " + (t == DType::f16 ? "true" : "false") + ");";
}

std::string glsl_vector_types(bool half) {
  std::string s = "layout(buffer_reference, std430, buffer_reference_align = 16) buffer F32x4s { vec4 v[]; };\n";
  // 16-bit words two to a uint, converted by the prelude (only devices with 16-bit storage have
  // that part of it).
  if (half) s += R"(
layout(buffer_reference, std430, buffer_reference_align = 8) buffer U16x4s { uvec2 v[]; };
float kiln_half_to_f32(uint h, bool f16) { return f16 ? kiln_f16_to_f32(h) : kiln_bf16_to_f32(h); }
uint kiln_f32_to_half(float x, bool f16) { return f16 ? kiln_f32_to_f16(x) : kiln_f32_to_bf16(x); }
vec4 kiln_unpack4(uvec2 w, bool f16) {
  return vec4(kiln_half_to_f32(w.x & 0xffffu, f16), kiln_half_to_f32(w.x >> 16, f16),
              kiln_half_to_f32(w.y & 0xffffu, f16), kiln_half_to_f32(w.y >> 16, f16));
}
uvec2 kiln_pack4(vec4 v, bool f16) {
  return uvec2(kiln_f32_to_half(v.x, f16) | (kiln_f32_to_half(v.y, f16) << 16),
               kiln_f32_to_half(v.z, f16) | (kiln_f32_to_half(v.w, f16) << 16));
}
)";
  return s;
}


}  // namespace kiln::vk

namespace kiln {

namespace {

// KILN_VULKAN_QUEUES=n (unless set_gpu_streams chose): n kiln devices per GPU, each with its own
// stream and, where the GPU's compute family has n queues, its own queue (so their work can
// overlap on the GPU).
std::uint32_t streams_from_env() {
  constexpr long kMax = kMaxGpuStreams;
  const char* env = std::getenv("KILN_VULKAN_QUEUES");
  if (!env || !*env) return 1;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end || n < 1 || n > kMax) {
    logger().warn("KILN_VULKAN_QUEUES={} is not a count from 1 to {}; using 1", env, kMax);
    return 1;
  }
  return static_cast<std::uint32_t>(n);
}

}  // namespace

std::vector<std::unique_ptr<DeviceBackend>> make_vulkan_devices(std::uint32_t streams_per_gpu) {
  std::vector<std::unique_ptr<DeviceBackend>> out;
  if (const char* env = std::getenv("KILN_VULKAN"); env && std::string(env) == "0") {
    if (log_enabled(spdlog::level::debug)) logger().debug("vulkan: disabled by KILN_VULKAN=0");
    return out;
  }
  std::shared_ptr<vk::Instance> instance;
  try {
    instance = vk::Instance::get();
  } catch (const std::exception& e) {
    if (log_enabled(spdlog::level::debug)) logger().debug("vulkan: no instance ({}); running on the CPU only", e.what());
    return out;
  }
  // Best first (discrete, integrated, virtual, software), then in the driver's order.
  std::vector<const vk::PhysicalDeviceInfo*> usable;
  for (const auto& d : instance->devices()) {
    if (d.usable()) usable.push_back(&d);
    else if (log_enabled(spdlog::level::debug)) logger().debug("vulkan: skipping {}: {}", d.name, d.why_unusable());
  }
  auto rank = [](const vk::PhysicalDeviceInfo* d) {
    switch (d->type) {
      case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
      case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
      case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
      default: return 3;
    }
  };
  std::stable_sort(usable.begin(), usable.end(), [&](auto* a, auto* b) { return rank(a) < rank(b); });
  const std::uint32_t streams = streams_per_gpu ? streams_per_gpu : streams_from_env();
  for (const auto* d : usable) {
    try {
      // Opened together: a GPU that fails to open adds no device at all.
      const int first_index = static_cast<int>(out.size());
      auto first = std::make_unique<vk::VulkanDevice>(instance, *d, first_index, std::string(), streams);
      std::vector<std::unique_ptr<DeviceBackend>> gpu;
      for (std::uint32_t s = 1; s < streams; ++s)
        gpu.push_back(std::make_unique<vk::VulkanDevice>(*first, s, first_index + static_cast<int>(s)));
      out.push_back(std::move(first));
      for (auto& g : gpu) out.push_back(std::move(g));
    } catch (const std::exception& e) {
      if (log_enabled(spdlog::level::debug)) logger().debug("vulkan: cannot open {}: {}", d->name, e.what());
    }
  }
  if (out.empty() && log_enabled(spdlog::level::debug)) logger().debug("vulkan: no usable device; running on the CPU only");
  return out;
}

}  // namespace kiln
