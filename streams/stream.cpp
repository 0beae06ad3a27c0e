#include "kiln/streams/stream.h"

#include <iterator>

#include "kiln/streams/runtime_settings.h"

namespace kiln {

namespace {
// A small number per submitting thread, given on its first submission.
std::uint32_t this_thread_lane() {
  static std::atomic<std::uint32_t> next{0};
  thread_local const std::uint32_t lane = next.fetch_add(1, std::memory_order_relaxed);
  return lane;
}
}  // namespace

std::uint64_t Stream::submit(OpIr&& op, Flush flush) {
  const std::uint64_t seq = next_seq_.fetch_add(1, std::memory_order_acq_rel);
  op.seq = seq;
  op.lane = this_thread_lane();
  flow_.submitted(output_bytes(op));
  queue_.enqueue(std::move(op));
  if (flush == Flush::reader && small_enough(seq)) {
    // If a scheduler thread is stepping, help() leaves it a note and it steps again for this
    // message; either way nobody needs waking.
    run_by_readers_.fetch_add(1, std::memory_order_relaxed);
    help();
    return seq;
  }
  const RuntimeSettings& settings = RuntimeSettings::get();
  // Without fusion nothing is gained by waiting. With it, a long run of messages still wakes
  // the scheduler now and then, so memory held by pending work stays bounded.
  if (flush != Flush::later || !settings.fusion.load(std::memory_order_relaxed) ||
      since_wake_.fetch_add(1, std::memory_order_relaxed) + 1 >= settings.flush_threshold.load(std::memory_order_relaxed))
    wake();
  return seq;
}

// Small: the last batch ran within the budget, and not many more messages were submitted since
// it than it held (a loop's requests or steps repeat their structure; something much larger
// goes to the scheduler, so the reading thread is held up by at most about the budget's work).
// Counted by sequence numbers: messages a scheduler step has already taken in without running
// them count too.
bool Stream::small_enough(std::uint64_t seq) const {
  if (!readers_run_) return false;
  const std::uint64_t budget_ns = RuntimeSettings::get().reader_batch_us.load(std::memory_order_relaxed) * 1000;
  const std::uint64_t since_batch = seq - last_batch_end_seq_.load(std::memory_order_relaxed);
  return budget_ns > 0 && last_batch_ns_.load(std::memory_order_relaxed) <= budget_ns &&
         since_batch <= 2 * last_batch_messages_.load(std::memory_order_relaxed) + 16;
}

void Stream::wake() {
  // Only the first wake-up after the scheduler went idle pays for a task.
  if (!armed_.exchange(true, std::memory_order_seq_cst)) wake_();
}

std::size_t Stream::drain(std::vector<OpIr>& into) {
  std::size_t total = 0;
  // Straight into `into`: an OpIr is a few hundred bytes, and a batch can hold thousands.
  while (const std::size_t n = queue_.try_dequeue_bulk(std::back_inserter(into), 64)) total += n;
  return total;
}

}  // namespace kiln
