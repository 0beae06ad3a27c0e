#include "kiln/devices/vulkan/vk_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "kiln/base/nap.h"

namespace kiln::vk {

void global_barrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1, &b,
                       0, nullptr, 0, nullptr);
}

CommandStream::CommandStream(const Context& ctx, std::uint32_t stream) : ctx_(ctx), stream_(stream) {
  VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = ctx.queue_family();
  VkCommandPool pool = VK_NULL_HANDLE;
  check(vkCreateCommandPool(ctx.device(), &ci, nullptr, &pool), "vkCreateCommandPool");
  pool_ = own(ctx.device(), pool);
  const char* env = std::getenv("KILN_DEVICE_TIME");
  timing_ = env && std::string(env) == "1";
}

CommandStream::~CommandStream() {
  try {
    finish();
  } catch (...) {
    // A lost device at teardown: nothing left to wait for.
  }
  // Only this stream's queue: another device may share the context (and be submitting).
  ctx_.wait_queue_idle(stream_);
}

void CommandStream::check_alive() const {
  if (lost_) throw DeviceLost("an earlier submission (the device is unusable)");
}

CommandStream::Frame& CommandStream::current() {
  if (recording_) return *recording_;
  check_alive();
  // Reuse a finished frame; with too many in flight, wait for the oldest.
  while (!in_flight_.empty() && (in_flight_.size() >= kMaxInFlight ||
                                 vkGetFenceStatus(ctx_.device(), in_flight_.front()->fence.get()) == VK_SUCCESS)) {
    wait(*in_flight_.front());
    retire(std::move(in_flight_.front()));
    in_flight_.pop_front();
  }
  if (!idle_frames_.empty()) {
    recording_ = std::move(idle_frames_.back());
    idle_frames_.pop_back();
  } else {
    recording_ = std::make_unique<Frame>();
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_.get();
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(ctx_.device(), &ai, &recording_->cb), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence = VK_NULL_HANDLE;
    check(vkCreateFence(ctx_.device(), &fi, nullptr, &fence), "vkCreateFence");
    recording_->fence = own(ctx_.device(), fence);
  }
  Frame& f = *recording_;
  f.timed = timing_.load(std::memory_order_relaxed) && ctx_.info().timestamp_valid_bits;
  if (f.timed && !f.timestamps) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    VkQueryPool pool = VK_NULL_HANDLE;
    check(vkCreateQueryPool(ctx_.device(), &qi, nullptr, &pool), "vkCreateQueryPool");
    f.timestamps = own(ctx_.device(), pool);
    if (ctx_.info().host_query_reset) vkResetQueryPool(ctx_.device(), pool, 0, 2);
  }
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(f.cb, &bi), "vkBeginCommandBuffer");
  if (f.timed) {
    // Reset from the host where the device allows it (after each read, in retire): a reset
    // recorded in the command buffer cost the H200 4 us of GPU time per submission.
    if (!ctx_.info().host_query_reset) vkCmdResetQueryPool(f.cb, f.timestamps.get(), 0, 2);
    // Written once everything submitted before has finished: busy time never counts twice.
    vkCmdWriteTimestamp(f.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, f.timestamps.get(), 0);
  }
  return f;
}

VkCommandBuffer CommandStream::begin_command() {
  Frame& f = current();
  // Orders this command after everything before it, including earlier submissions.
  global_barrier(f.cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT);
  return f.cb;
}

void CommandStream::done_command() {
  if (++recording_->commands >= kMaxCommands) submit();
}

HostSlice CommandStream::host_alloc(std::uint64_t bytes, std::uint64_t align) {
  Frame& f = current();
  bytes = std::max<std::uint64_t>(bytes, 1);
  HostBlock* block = nullptr;
  if (!f.host.empty()) {
    HostBlock& last = *f.host.back();
    const std::uint64_t at = (last.used + align - 1) / align * align;
    if (at + bytes <= last.alloc.size) {
      last.used = at;
      block = &last;
    }
  }
  if (!block) {
    // An idle block that fits, else a new one (at least kHostBlockBytes).
    auto it = std::find_if(idle_host_.begin(), idle_host_.end(), [&](auto& b) { return b->alloc.size >= bytes; });
    if (it != idle_host_.end()) {
      f.host.push_back(std::move(*it));
      idle_host_.erase(it);
    } else {
      auto b = std::make_unique<HostBlock>();
      b->alloc = allocate_buffer(ctx_, std::max(bytes, kHostBlockBytes),
                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
      f.host.push_back(std::move(b));
    }
    block = f.host.back().get();
    block->used = 0;
  }
  HostSlice s;
  s.ptr = static_cast<std::byte*>(block->alloc.mapped) + block->used;
  s.buffer = block->alloc.buffer.get();
  s.offset = block->used;
  s.address = block->alloc.address + block->used;
  block->used += bytes;
  return s;
}

void CommandStream::submit() {
  if (!recording_) return;
  Frame& f = *recording_;
  // Results become visible to the host once the fence signals.
  global_barrier(f.cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  if (f.timed) vkCmdWriteTimestamp(f.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, f.timestamps.get(), 1);
  check(vkEndCommandBuffer(f.cb), "vkEndCommandBuffer");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &f.cb;
  const VkResult r = ctx_.submit(stream_, si, f.fence.get());
  if (r != VK_SUCCESS) {
    lost_ = lost_ || r == VK_ERROR_DEVICE_LOST;
    vkResetCommandBuffer(f.cb, 0);
    retire(std::move(recording_));
    throw_result(r, "vkQueueSubmit");
  }
  f.submitted = true;
  in_flight_.push_back(std::move(recording_));
}

void CommandStream::wait(Frame& frame) {
  const VkFence fence = frame.fence.get();
  // Polls for kPollWindow, then naps between polls (base/nap.h) up to kNapWindow, and only then
  // blocks in the driver, where waking late costs under 1% of the wait. Not on a CPU device
  // (lavapipe): there polling would take a core from the work itself.
  VkResult r = vkGetFenceStatus(ctx_.device(), fence);
  if (r == VK_NOT_READY && !ctx_.info().on_host_cores()) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    while (r == VK_NOT_READY && clock::now() - start < kPollWindow) r = vkGetFenceStatus(ctx_.device(), fence);
    nap_until([&] { return r != VK_NOT_READY || (r = vkGetFenceStatus(ctx_.device(), fence)) != VK_NOT_READY; }, kNap,
              start + kNapWindow);
  }
  if (r == VK_NOT_READY) r = vkWaitForFences(ctx_.device(), 1, &fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) {
    lost_ = lost_ || r == VK_ERROR_DEVICE_LOST;
    throw_result(r, "vkWaitForFences");
  }
}

void CommandStream::retire(std::unique_ptr<Frame> frame) {
  if (frame->timed && frame->submitted) {
    std::uint64_t t[2] = {0, 0};
    if (vkGetQueryPoolResults(ctx_.device(), frame->timestamps.get(), 0, 2, sizeof t, t, sizeof t[0],
                              VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
      const std::uint32_t bits = ctx_.info().timestamp_valid_bits;
      const std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
      const double ns = static_cast<double>((t[1] - t[0]) & mask) * ctx_.info().timestamp_period_ns;
      busy_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
    }
    if (ctx_.info().host_query_reset) vkResetQueryPool(ctx_.device(), frame->timestamps.get(), 0, 2);
  }
  frame->submitted = false;
  frame->timed = false;
  const VkFence fence = frame->fence.get();
  vkResetFences(ctx_.device(), 1, &fence);
  vkResetCommandBuffer(frame->cb, 0);
  // Keep a bounded amount of staging memory around: big one-off blocks go back to the driver.
  for (auto& b : frame->host)
    if (b->alloc.size <= 4 * kHostBlockBytes && idle_host_.size() < 16) idle_host_.push_back(std::move(b));
  frame->host.clear();
  frame->kept.clear();
  frame->commands = 0;
  idle_frames_.push_back(std::move(frame));
}

bool CommandStream::idle() {
  if (recording_ && recording_->commands > 0) return false;
  while (!in_flight_.empty()) {
    const VkResult r = vkGetFenceStatus(ctx_.device(), in_flight_.front()->fence.get());
    if (r == VK_NOT_READY) return false;
    if (r != VK_SUCCESS) {
      lost_ = lost_ || r == VK_ERROR_DEVICE_LOST;
      throw_result(r, "vkGetFenceStatus");
    }
    retire(std::move(in_flight_.front()));
    in_flight_.pop_front();
  }
  return true;
}

void CommandStream::finish(const std::function<void()>& while_idle) {
  finishes_.fetch_add(1, std::memory_order_relaxed);
  submit();
  for (auto& frame : in_flight_) wait(*frame);
  // Before retiring: retiring may hand large staging blocks back to the driver, and the caller
  // may still be reading one (a read's result).
  if (while_idle) while_idle();
  while (!in_flight_.empty()) {
    retire(std::move(in_flight_.front()));
    in_flight_.pop_front();
  }
}

}  // namespace kiln::vk
