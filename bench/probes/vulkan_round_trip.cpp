// kiln_vulkan_round_trip: what a synced GPU step costs besides its kernel, on bare Vulkan and
// through kiln, on the same machine. It bounds what a synced benchmark can reach on a device:
// the README's round-trip figures of 2026-11-24 come from it (the first of them from the same
// measurement run before it was committed).
//
// Bare Vulkan (the first device that has a compute queue; no kiln engine, only kiln's GLSL
// compiler and its barrier): one command buffer is recorded, submitted with a fence and the
// fence polled until it signals, 2,900 times after 100 for warm-up, for each of these contents:
//   nothing; one dispatch of an empty kernel (1 workgroup); the dispatch with the barrier kiln
//   puts before every command; with the barrier kiln puts at the end of a submission (results
//   visible to the host); with both.
// Through kiln (Device::vulkan(0)): a five-op GELU written by hand (one fused kernel) and a
// sync, on 1,024 and on 16M elements; and an embedding lookup loop whose index range checks
// do not wait for the device, against the same loop with a sync after each lookup.
// Usage: kiln_vulkan_round_trip [iterations]
#include <vulkan/vulkan.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_commands.h"
#include "kiln/devices/vulkan/vk_shader.h"
#include "kiln/engine/kiln.h"

namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(r));
    std::exit(1);
  }
}

// Bits of a command buffer's content.
constexpr int kLeadingBarrier = 1, kDispatch = 2, kHostBarrier = 4;

void bare_vulkan(int iterations) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
  std::uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> physicals(n);
  vkEnumeratePhysicalDevices(instance, &n, physicals.data());
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  std::uint32_t family = 0;
  for (VkPhysicalDevice p : physicals) {
    std::uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(p, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(p, &families, props.data());
    for (std::uint32_t f = 0; f < families && !physical; ++f)
      if (props[f].queueFlags & VK_QUEUE_COMPUTE_BIT) physical = p, family = f;
    if (physical) break;
  }
  if (!physical) {
    std::printf("bare Vulkan: no device with a compute queue\n");
    return;
  }
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical, &props);
  std::printf("bare Vulkan on %s, %d iterations each (after 100 for warm-up)\n", props.deviceName, iterations);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  VkDevice device = VK_NULL_HANDLE;
  check(vkCreateDevice(physical, &dci, nullptr, &device), "vkCreateDevice");
  VkQueue queue = VK_NULL_HANDLE;
  vkGetDeviceQueue(device, family, 0, &queue);

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = family;
  VkCommandPool pool = VK_NULL_HANDLE;
  check(vkCreateCommandPool(device, &pci, nullptr, &pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(device, &ai, &cb), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  check(vkCreateFence(device, &fci, nullptr, &fence), "vkCreateFence");

  const std::vector<std::uint32_t> spirv =
      kiln::vk::compile_glsl("empty", "#version 450\nlayout(local_size_x = 64) in;\nvoid main() {}\n");
  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = spirv.size() * 4;
  smci.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(device, &smci, nullptr, &module), "vkCreateShaderModule");
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  VkPipelineLayout layout = VK_NULL_HANDLE;
  check(vkCreatePipelineLayout(device, &plci, nullptr, &layout), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = module;
  cpci.stage.pName = "main";
  cpci.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  check(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline), "vkCreateComputePipelines");

  const VkAccessFlags all = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT;
  for (const int content : {0, kDispatch, kLeadingBarrier | kDispatch, kDispatch | kHostBarrier,
                            kLeadingBarrier | kDispatch | kHostBarrier}) {
    double record = 0, submit = 0, done = 0;
    for (int i = 0; i < iterations + 100; ++i) {
      const auto t0 = Clock::now();
      VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
      vkBeginCommandBuffer(cb, &bi);
      if (content & kLeadingBarrier)
        kiln::vk::global_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, all);
      if (content & kDispatch) {
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        vkCmdDispatch(cb, 1, 1, 1);
      }
      if (content & kHostBarrier) kiln::vk::global_barrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
      vkEndCommandBuffer(cb);
      const auto t1 = Clock::now();
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cb;
      check(vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
      const auto t2 = Clock::now();
      VkResult r;
      while ((r = vkGetFenceStatus(device, fence)) == VK_NOT_READY) {
      }
      check(r, "vkGetFenceStatus");
      const auto t3 = Clock::now();
      vkResetFences(device, 1, &fence);
      vkResetCommandBuffer(cb, 0);
      if (i >= 100) record += micros(t0, t1), submit += micros(t1, t2), done += micros(t2, t3);
    }
    std::string name = content ? "" : "nothing";
    if (content & kLeadingBarrier) name += "barrier, ";
    if (content & kDispatch) name += "dispatch";
    if (content & kHostBarrier) name += ", host barrier";
    const double n = iterations;
    std::printf("  %-36s record %5.2f us, submit %5.2f us, fence seen %6.2f us after the submit: %6.2f us\n",
                name.c_str(), record / n, submit / n, done / n, (record + submit + done) / n);
  }
  vkDestroyPipeline(device, pipeline, nullptr);
  vkDestroyPipelineLayout(device, layout, nullptr);
  vkDestroyShaderModule(device, module, nullptr);
  vkDestroyFence(device, fence, nullptr);
  vkDestroyCommandPool(device, pool, nullptr);
  vkDestroyDevice(device, nullptr);
  vkDestroyInstance(instance, nullptr);
}

kiln::Tensor gelu_by_hand(const kiln::Tensor& x) {
  using namespace kiln;
  return div(mul(x, add(erf(div(x, std::sqrt(2.0))), 1.0)), 2.0);
}

void through_kiln(int iterations) {
  using namespace kiln;
  const Device d = Device::vulkan(0);
  const DeviceProperties p = device_properties(d);
  std::printf("kiln on %s (%s, %.1f GiB of its own memory): y = gelu by hand (one fused kernel), then sync\n",
              p.name.c_str(), p.type.c_str(), static_cast<double>(p.memory_bytes) / (1ull << 30));
  Generator gen(5);
  for (const std::int64_t n : {std::int64_t{1024}, std::int64_t{16} << 20}) {
    const Tensor x = randn(Shape{n}, gen, {DType::f32, d});
    for (int i = 0; i < 20; ++i) {
      Tensor y = gelu_by_hand(x);
      sync(d).get();
    }
    const int reps = n > 100000 ? std::max(iterations / 10, 10) : iterations;
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) {
      Tensor y = gelu_by_hand(x);
      sync(d).get();
    }
    const double us = micros(t0, Clock::now()) / reps;
    std::printf("  %9lld elements: %7.2f us per iteration, %.3f TB/s\n", static_cast<long long>(n), us,
                8.0 * static_cast<double>(n) / us / 1e6);
  }
}

// An embedding lookup loop: 64 steps of index_select (64 rows of a [4096, 256] table, by
// indices uploaded once) and an add, with one read at the end; and the same with a sync after
// each lookup, what every index op cost while its range check waited for the device (a lower
// bound: that check also wrote and read its flag through copies).
void index_loop(int iterations) {
  using namespace kiln;
  const Device d = Device::vulkan(0);
  Generator gen(6);
  const Tensor table = randn(Shape{4096, 256}, gen, {DType::f32, d});
  std::vector<std::int64_t> rows(64);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>((i * 97) % 4096);
  const Tensor index = from_vector(rows, Shape{64}, d);
  std::printf("kiln on %s: 64 x (index_select of 64 rows of [4096, 256], add), then a read\n",
              device_name(d).c_str());
  for (const bool sync_each : {false, true}) {
    auto step = [&] {
      Tensor acc = zeros(Shape{64, 256}, {DType::f32, d});
      for (int i = 0; i < 64; ++i) {
        acc = add(std::move(acc), index_select(table, 0, index));
        if (sync_each) sync(d).get();
      }
      return acc.to_vector<float>().get();
    };
    for (int i = 0; i < 5; ++i) (void)step();
    const int reps = std::max(iterations / 30, 10);
    const std::uint64_t waits = counters(d).device_waits;
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) (void)step();
    const double us = micros(t0, Clock::now()) / reps;
    std::printf("  %-28s %8.1f us per loop, %5.1f device waits per loop\n",
                sync_each ? "sync after each lookup:" : "checks deferred:", us,
                static_cast<double>(counters(d).device_waits - waits) / reps);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(std::atoi(argv[1]), 1) : 2900;
  bare_vulkan(iterations);
  try {
    through_kiln(iterations);
    index_loop(iterations);
  } catch (const std::exception& e) {
    std::printf("kiln: %s\n", e.what());
  }
}
