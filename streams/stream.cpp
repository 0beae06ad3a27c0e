#include "streams/stream.h"

namespace kiln {

std::uint64_t Stream::submit(OpIr&& op) {
  const std::uint64_t seq = next_seq_.fetch_add(1, std::memory_order_acq_rel);
  op.seq = seq;
  queue_.enqueue(std::move(op));
  // Only the first submission after the scheduler went idle pays for a wake-up.
  if (!armed_.exchange(true, std::memory_order_seq_cst)) wake_();
  return seq;
}

std::size_t Stream::drain(std::vector<OpIr>& into) {
  std::size_t total = 0;
  OpIr chunk[32];
  for (;;) {
    const std::size_t n = queue_.try_dequeue_bulk(chunk, 32);
    if (n == 0) break;
    for (std::size_t i = 0; i < n; ++i) into.push_back(std::move(chunk[i]));
    total += n;
  }
  return total;
}

}  // namespace kiln
