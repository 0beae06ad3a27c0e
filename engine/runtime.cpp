#include "kiln/engine/runtime.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "kiln/engine/engine.h"
#include "kiln/engine/submit.h"
#include "kiln/base/log.h"
#include "kiln/streams/runtime_settings.h"

namespace kiln {

namespace {
std::atomic<bool> g_alive{false};

// set_gpu_streams: the count asked for (0: KILN_VULKAN_QUEUES or 1), and whether the engine has
// read it (it opens the devices once).
std::mutex g_config_mutex;
std::uint32_t g_gpu_streams = 0;
bool g_devices_opened = false;

std::uint32_t gpu_streams_for_engine() {
  std::lock_guard lock(g_config_mutex);
  g_devices_opened = true;
  return g_gpu_streams;
}
}  // namespace

void set_gpu_streams(std::uint32_t per_gpu) {
  KILN_CHECK(per_gpu >= 1 && per_gpu <= kMaxGpuStreams, "set_gpu_streams",
             "streams per GPU must be 1 to " + std::to_string(kMaxGpuStreams) + ", got " + std::to_string(per_gpu));
  std::lock_guard lock(g_config_mutex);
  KILN_CHECK(!g_devices_opened, "set_gpu_streams",
             "the engine has already opened its devices (the first op, devices() or another call that needs "
             "a device came first); call set_gpu_streams before any of them");
  g_gpu_streams = per_gpu;
}

Engine& Engine::get() {
  static Engine engine;
  return engine;
}

bool Engine::alive() { return g_alive.load(std::memory_order_acquire); }

namespace {
// Streams the scheduler's arena must host before the GPUs are known: the CPU's and, for one GPU,
// its streams (set_gpu_streams, else KILN_VULKAN_QUEUES, else 1). A machine with several GPUs
// has more cores than streams, which is what the arena needs (scheduler/scheduler.h).
std::size_t expected_streams() {
  std::uint32_t per_gpu = 0;
  {
    // From here on the count is fixed (set_gpu_streams refuses): the arena is sized by it.
    std::lock_guard lock(g_config_mutex);
    g_devices_opened = true;
    per_gpu = g_gpu_streams;
  }
  if (per_gpu == 0)
    if (const char* env = std::getenv("KILN_VULKAN_QUEUES")) per_gpu = static_cast<std::uint32_t>(std::atoi(env));
  return 1 + std::clamp<std::uint32_t>(per_gpu, 1, kMaxGpuStreams);
}
}  // namespace

Engine::Engine() {
  cpu_ = std::make_unique<DeviceRuntime>();
  cpu_->device = Device::cpu();
  cpu_->backend = make_cpu_device();
  cpu_->executor = std::make_unique<Executor>(*cpu_->backend);
  scheduler_ = std::make_unique<Scheduler>(expected_streams());
  scheduler_->attach(cpu_->stream, *cpu_->executor);
  cpu_->stream.flow().set_name("cpu");
  cpu_->stream.let_readers_run_small_batches(true);
  g_alive.store(true, std::memory_order_release);
  if (log_enabled(spdlog::level::info)) logger().info("engine started on the cpu (GPUs are opened on first use)");
}

void Engine::open_gpus() {
  std::call_once(open_gpus_, [&] {
    // Vulkan devices, unless KILN_VULKAN=0; none found means CPU only (logged at debug level).
    std::vector<std::unique_ptr<DeviceBackend>> gpus;
    try {
      gpus = make_vulkan_devices(gpu_streams_for_engine());
    } catch (const std::exception& e) {
      if (log_enabled(spdlog::level::debug)) logger().debug("vulkan unavailable: {}", e.what());
    }
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      auto rt = std::make_unique<DeviceRuntime>();
      rt->device = Device::vulkan(static_cast<int>(i));
      rt->backend = std::move(gpus[i]);
      rt->executor = std::make_unique<Executor>(*rt->backend);
      scheduler_->attach(rt->stream, *rt->executor);
      rt->stream.flow().set_name(rt->device.str());
      gpus_.push_back(std::move(rt));
    }
    if (log_enabled(spdlog::level::info)) logger().info("engine opened {} GPU device(s)", gpus_.size());
    // The Vulkan library's own statics (the instance, glslang's state) were made after the
    // engine, so they would be destroyed before it: the engine shuts down first, from a
    // handler registered after them (handlers and static destructors run in reverse order).
    if (!gpus_.empty()) std::atexit([] { Engine::get().shut_down(); });
  });
  gpus_opened_.store(true, std::memory_order_release);
}

Engine::~Engine() { shut_down(); }

void Engine::shut_down() {
  std::call_once(shut_down_, [&] {
    g_alive.store(false, std::memory_order_release);
    scheduler_.reset();
    // Every device's work done before any device goes: a device may hold another's buffer until
    // a copy from it has run (kiln::to between streams of a GPU).
    auto drain = [](DeviceRuntime& r) {
      try {
        r.backend->synchronize();
      } catch (...) {
        // A lost device: nothing left to wait for.
      }
    };
    drain(*cpu_);
    for (auto& r : gpus_) drain(*r);
    gpus_.clear();
  });
}

DeviceRuntime& Engine::gpu_runtime(Device device, const char* op) {
  open_gpus();
  for (auto& r : gpus_)
    if (r->device == device) return *r;
  throw Error(op, "device " + device.str() + " is not available");
}

std::vector<Device> Engine::devices() {
  open_gpus();
  std::vector<Device> out{cpu_->device};
  for (auto& r : gpus_) out.push_back(r->device);
  return out;
}

// ---- public controls (engine/engine.h) ----

namespace {
class SyncCompletion final : public Completion {
 public:
  Promise<void> promise;
  void complete(const std::byte*, std::size_t) override { promise.set_value(); }
  void fail(std::exception_ptr e) override { promise.set_exception(e); }
};

// A sync message; `release_memory`: the executor first gives the device's unused memory back
// (release_cached_memory), in stream order.
Future<void> submit_sync(const char* what, Device device, bool release_memory) {
  KILN_CHECK(detail::recording_pass() == nullptr, what,
             "a recorded pass cannot wait for its device: it runs nothing while recorded");
  auto& rt = Engine::get().runtime(device, what);
  auto c = std::make_shared<SyncCompletion>();
  auto state = c->promise.state();
  OpIr op;
  op.kind = OpKind::sync;
  op.attrs.flag = release_memory;
  op.completion = std::move(c);
  rt.stream.submit(std::move(op), Flush::reader);
  return Future<void>(std::move(state), rt.helper());
}
}  // namespace

Future<void> sync(Device device) { return submit_sync("sync", device, false); }

Future<void> Device::sync() const { return kiln::sync(*this); }

std::optional<Device> parse_device(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "vulkan") return Device::vulkan(0);
  if (s.rfind("vulkan:", 0) == 0 && s.size() > 7 && s.size() < 12 &&
      s.find_first_not_of("0123456789", 7) == std::string::npos)
    return Device::vulkan(std::stoi(s.substr(7)));
  return std::nullopt;
}

MemoryStats memory_stats(Device device) { return Engine::get().runtime(device, "memory_stats").backend->memory().stats(); }
void reset_peak_memory(Device device) { Engine::get().runtime(device, "reset_peak_memory").backend->memory().reset_peak(); }
void set_memory_limit(Device device, std::size_t bytes) {
  Engine::get().runtime(device, "set_memory_limit").backend->memory().set_limit(bytes);
}
void release_cached_memory(Device device) { submit_sync("release_cached_memory", device, true).get(); }

EngineCounters counters(Device device) {
  auto& rt = Engine::get().runtime(device, "counters");
  const ExecutorCounters& c = rt.executor->counters();
  EngineCounters out;
  out.ops_submitted = rt.stream.submitted();
  out.ops_run = c.ops_run.load();
  out.kernels_launched = c.kernels_launched.load();
  out.inplace_reuses = c.inplace_reuses.load();
  out.ops_failed = c.ops_failed.load();
  out.batches = c.batches.load();
  out.ops_fused = c.ops_fused.load();
  out.fused_kernels = c.fused_kernels.load();
  out.plan_cache_hits = c.plan_cache_hits.load();
  out.plan_cache_misses = c.plan_cache_misses.load();
  out.peer_copies = c.peer_copies.load();
  out.overlapped_kernels = c.overlapped_kernels.load();
  out.device_busy_ns = rt.backend->busy_ns();
  out.device_waits = rt.backend->full_waits();
  out.staged_transfers = rt.backend->staged_transfers();
  out.weights_packed = rt.backend->weights_packed();
  out.plans_replayed = c.plans_replayed.load();
  out.kernels_precompiled = c.kernels_precompiled.load();
  out.passes_replayed = c.passes_replayed.load();
  out.ops_decomposed = c.ops_decomposed.load();
  out.batches_run_by_readers = rt.stream.batches_run_by_readers();
  const FlowControlCounters flow = rt.stream.flow().counters();
  out.held_back = flow.held_back;
  out.held_back_ns = flow.held_back_ns;
  out.in_flight_ops = flow.in_flight_ops;
  out.in_flight_bytes = flow.in_flight_bytes;
  return out;
}

void set_device_timing(Device device, bool enabled) {
  Engine::get().runtime(device, "set_device_timing").backend->set_timing(enabled);
}

void set_fusion(bool enabled) { RuntimeSettings::get().fusion.store(enabled); }
bool fusion_enabled() { return RuntimeSettings::get().fusion.load(); }
void set_overlap(bool enabled) { RuntimeSettings::get().overlap.store(enabled); }
bool overlap_enabled() { return RuntimeSettings::get().overlap.load(); }
void set_reader_batch_budget(std::chrono::microseconds budget) {
  KILN_CHECK(budget.count() >= 0, "set_reader_batch_budget", "the budget must not be negative");
  RuntimeSettings::get().reader_batch_us.store(static_cast<std::uint64_t>(budget.count()));
}
void set_flow_control(const FlowControlOptions& options) {
  RuntimeSettings& s = RuntimeSettings::get();
  s.max_in_flight_ops.store(options.max_ops);
  s.max_in_flight_bytes.store(options.max_bytes);
  s.error_when_full.store(options.when_full == WhenFull::error);
}
static_assert(FlowControlOptions{}.max_ops == RuntimeSettings::kDefaultMaxInFlightOps &&
                  FlowControlOptions{}.max_bytes == RuntimeSettings::kDefaultMaxInFlightBytes,
              "the public defaults are the settings' defaults");
FlowControlOptions flow_control() {
  const RuntimeSettings& s = RuntimeSettings::get();
  return FlowControlOptions{.max_ops = s.max_in_flight_ops.load(),
                            .max_bytes = s.max_in_flight_bytes.load(),
                            .when_full = s.error_when_full.load() ? WhenFull::error : WhenFull::wait};
}
std::size_t flush_threshold() { return RuntimeSettings::get().flush_threshold.load(); }
void set_flush_threshold(std::size_t messages) {
  KILN_CHECK(messages > 0, "set_flush_threshold", "the threshold must be at least 1 message");
  RuntimeSettings::get().flush_threshold.store(messages);
}

std::vector<Device> devices() { return Engine::get().devices(); }
std::string device_name(Device device) { return Engine::get().runtime(device, "device_name").backend->info().name; }

DeviceProperties device_properties(Device device) {
  const DeviceInfo& info = Engine::get().runtime(device, "device_properties").backend->info();
  return DeviceProperties{device, info.name, info.type, info.memory_bytes};
}

Device best_device() {
  // By what a device says it is (DeviceInfo::type), not by its kind: "cpu" for the CPU.
  for (Device d : devices()) {
    const std::string type = device_properties(d).type;
    if (type != "cpu" && type != "software") return d;
  }
  return Device::cpu();
}

}  // namespace kiln
