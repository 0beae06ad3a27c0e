// What a service engineer scrapes, in Prometheus' text format (version 0.0.4): the HTTP server's
// answers counted by status and its latency histogram (HttpMetrics), and a Batcher's queue depth,
// counters and batch sizes (batcher_prometheus_text). A /metrics handler returns their sum.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "kiln/serve/batcher.h"

namespace kiln::serve {

class HttpMetrics {
 public:
  // Upper bounds of the latency histogram's buckets, in seconds (then +Inf).
  static constexpr std::array<double, 14> kLatencyBounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                         0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0};

  // One answer sent: its status and the time from its header's arrival to its answer.
  void record(int status, std::chrono::steady_clock::duration latency);
  std::uint64_t answered(int status) const;  // answers with that status so far
  std::uint64_t answered() const;            // all answers

  // kiln_http_requests_total{code="..."}, kiln_http_request_duration_seconds (histogram),
  // plus the gauges given (open connections, requests in flight).
  std::string prometheus_text(std::size_t open_connections, std::size_t in_flight) const;

 private:
  mutable std::mutex mutex_;
  std::map<int, std::uint64_t> by_status_;
  std::array<std::uint64_t, kLatencyBounds.size() + 1> buckets_{};  // not cumulative; the last: +Inf
  double latency_sum_ = 0;
  std::uint64_t count_ = 0;
};

// kiln_batcher_queue_depth, kiln_batcher_requests_total, ..._rejected_full_total,
// ..._expired_total, ..._failed_total, and kiln_batcher_batch_rows (a histogram of the rows of
// each forward pass: one bucket per size up to max_batch).
std::string batcher_prometheus_text(const BatcherStats& stats);

}  // namespace kiln::serve
