#include "kiln/streams/flow_control.h"

#include <chrono>
#include <thread>

#include "kiln/base/error.h"
#include "kiln/base/log.h"
#include "kiln/base/trace.h"
#include "kiln/streams/runtime_settings.h"

namespace kiln {

thread_local int FlowControl::depth_ = 0;

namespace {
// Differences of counters read one after another: the later one may already count work that
// the earlier one does not, so a "negative" difference is 0.
std::uint64_t difference(std::uint64_t more, std::uint64_t less) { return more > less ? more - less : 0; }

std::string mib(std::uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }
}  // namespace

bool FlowControl::within_bound(std::uint64_t bytes) const {
  const RuntimeSettings& s = RuntimeSettings::get();
  const std::uint64_t max_ops = s.max_in_flight_ops.load(std::memory_order_relaxed);
  if (max_ops && difference(submitted_ops_.load(std::memory_order_relaxed), ran_ops_.load(std::memory_order_relaxed)) >= max_ops)
    return false;
  const std::uint64_t max_bytes = s.max_in_flight_bytes.load(std::memory_order_relaxed);
  if (!max_bytes) return true;
  const std::uint64_t in_flight =
      difference(submitted_bytes_.load(std::memory_order_relaxed), ran_bytes_.load(std::memory_order_relaxed));
  // One message larger than the bound still goes through once nothing else is in flight.
  return in_flight == 0 || in_flight + bytes <= max_bytes;
}

void FlowControl::hold_back(std::uint64_t bytes, const char* op, void (*flush)(void*), void* flush_arg) {
  if (depth_ > 0) return;
  const RuntimeSettings& s = RuntimeSettings::get();
  if (s.error_when_full.load(std::memory_order_relaxed)) {
    const FlowControlCounters c = counters();
    throw Error(op, "the " + name_ + " stream holds " + std::to_string(c.in_flight_ops) + " ops (" +
                        mib(c.in_flight_bytes) + " of outputs) not yet run, at its bound of " +
                        std::to_string(s.max_in_flight_ops.load()) + " ops / " + mib(s.max_in_flight_bytes.load()) +
                        ": the caller runs too far ahead of the device (read a result or sync first, or raise the "
                        "bound with set_flow_control)");
  }
  const trace::Span span("held back", "flow");
  const auto start = std::chrono::steady_clock::now();
  // Pending ops may be waiting for a read or the flush threshold: ask the scheduler to run
  // them now, then sleep until a batch has run and the stream is back within its bound.
  for (;;) {
    flush(flush_arg);
    sleepers_.fetch_add(1);
    const std::uint32_t seen = progress_.load();
    const bool within = within_bound(bytes);
    // Sleep until a batch has run, but ask for a flush again every 2 ms: a request that meets
    // a scheduler step already past the end of its queue is lost, and on an overloaded 2-core
    // machine all submitters then slept for good (FlowControl.ManyThreadsAtATightBound...).
    for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
         !within && progress_.load() == seen && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    sleepers_.fetch_sub(1);
    if (within) break;
  }
  const auto waited =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  held_back_.fetch_add(1, std::memory_order_relaxed);
  held_back_ns_.fetch_add(waited, std::memory_order_relaxed);
  if (log_enabled(spdlog::level::debug))
    logger().debug("{}: held back {} us on the {} stream (bound {} ops / {})", op, waited / 1000, name_,
                   s.max_in_flight_ops.load(), mib(s.max_in_flight_bytes.load()));
}

void FlowControl::ran(std::uint64_t ops, std::uint64_t bytes) {
  ran_ops_.fetch_add(ops, std::memory_order_relaxed);
  if (bytes) ran_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  // seq_cst with the sleepers' increment and load (hold_back): either this sees a sleeper and
  // wakes it, or the sleeper's load sees this increment and does not sleep.
  progress_.fetch_add(1);
  if (sleepers_.load()) progress_.notify_all();
}

FlowControlCounters FlowControl::counters() const {
  FlowControlCounters c;
  c.held_back = held_back_.load(std::memory_order_relaxed);
  c.held_back_ns = held_back_ns_.load(std::memory_order_relaxed);
  c.in_flight_ops = difference(submitted_ops_.load(), ran_ops_.load());
  c.in_flight_bytes = difference(submitted_bytes_.load(), ran_bytes_.load());
  return c;
}

}  // namespace kiln
