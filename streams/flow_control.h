// Flow control of one stream: how much work a caller may have submitted that the device has not
// yet run. Submitting never waits for the device, so without a bound a loop runs as far ahead
// as it likes: a training loop ran ~320 steps (27 s of work) ahead of the CPU, its batches and
// their uploads queued, Ctrl-C and every read waiting behind all of it. As CUDA bounds its launch
// queue, each stream bounds the ops and the bytes of outputs in flight (submitted, not yet run);
// a thread that would pass the bound waits here (or, by setting, gets a kiln::Error) before its
// message takes a sequence number, until the device has caught up.
//
// Only work is held back: reads, syncs and drops are never held, so a read never waits for work
// submitted after it, and a thread that runs the scheduler's steps (or a kernel) is never held
// (it is what the others wait for).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace kiln {

struct FlowControlCounters {
  std::uint64_t held_back = 0;     // submissions that waited for the device
  std::uint64_t held_back_ns = 0;  // the time they waited, summed over threads
  std::uint64_t in_flight_ops = 0;    // now: messages submitted, not yet run
  std::uint64_t in_flight_bytes = 0;  // now: bytes of their outputs
};

class FlowControl {
 public:
  // `submitted`: the stream's count of messages numbered so far (its next sequence number), which
  // is the count of messages submitted; flow control keeps no second one.
  explicit FlowControl(const std::atomic<std::uint64_t>& submitted) : submitted_ops_(submitted) {}

  // A name for errors and logs ("cpu", "vulkan:0").
  void set_name(std::string name) { name_ = std::move(name); }

  // Called by a submitter before its message is numbered: returns at once while the stream is
  // within its bound (two relaxed loads), else asks for a flush through `flush` and waits until
  // the device has run enough, or throws when the setting says so. `bytes`: the outputs' size.
  template <class Flush> void admit(std::uint64_t bytes, const char* op, const Flush& flush) {
    if (within_bound(bytes)) return;
    hold_back(bytes, op, [](void* f) { (*static_cast<const Flush*>(f))(); }, const_cast<Flush*>(&flush));
  }

  // Submission side, once the message is numbered: its outputs' bytes.
  void submitted(std::uint64_t bytes) {
    if (bytes) submitted_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  // Scheduler side, after a batch ran: `ops` messages with `bytes` of outputs are done.
  void ran(std::uint64_t ops, std::uint64_t bytes);

  FlowControlCounters counters() const;

  // While one lives, this thread is never held back (the scheduler's steps, kernels).
  class Exempt {
   public:
    Exempt() { ++depth_; }
    ~Exempt() { --depth_; }
    Exempt(const Exempt&) = delete;
    Exempt& operator=(const Exempt&) = delete;
  };

 private:
  bool within_bound(std::uint64_t bytes) const;
  void hold_back(std::uint64_t bytes, const char* op, void (*flush)(void*), void* flush_arg);

  static thread_local int depth_;
  std::string name_ = "stream";
  const std::atomic<std::uint64_t>& submitted_ops_;
  std::atomic<std::uint64_t> submitted_bytes_{0};
  std::atomic<std::uint64_t> ran_ops_{0}, ran_bytes_{0};
  std::atomic<std::uint32_t> progress_{0};  // bumped after each batch; held threads sleep on it
  std::atomic<std::uint32_t> sleepers_{0};
  std::atomic<std::uint64_t> held_back_{0}, held_back_ns_{0};
};

}  // namespace kiln
