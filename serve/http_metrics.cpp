#include "kiln/serve/http_metrics.h"

#include <algorithm>
#include <cstdio>

namespace kiln::serve {

namespace {

// Prometheus writes bounds and sums as plain decimals: "0.0005", "1", "2.5".
std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

void counter(std::string& out, const char* name, const char* help, std::uint64_t value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
         std::to_string(value) + "\n";
}

void gauge(std::string& out, const char* name, const char* help, std::uint64_t value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + " " +
         std::to_string(value) + "\n";
}

}  // namespace

void HttpMetrics::record(int status, std::chrono::steady_clock::duration latency) {
  const double seconds = std::chrono::duration<double>(latency).count();
  const auto bucket = static_cast<std::size_t>(std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) -
                                               kLatencyBounds.begin());
  const std::lock_guard lock(mutex_);
  ++by_status_[status];
  ++buckets_[bucket];
  latency_sum_ += seconds;
  ++count_;
}

std::uint64_t HttpMetrics::answered(int status) const {
  const std::lock_guard lock(mutex_);
  const auto it = by_status_.find(status);
  return it == by_status_.end() ? 0 : it->second;
}

std::uint64_t HttpMetrics::answered() const {
  const std::lock_guard lock(mutex_);
  return count_;
}

std::string HttpMetrics::prometheus_text(std::size_t open_connections, std::size_t in_flight) const {
  std::string out;
  const std::lock_guard lock(mutex_);
  out += "# HELP kiln_http_requests_total HTTP answers sent, by status code.\n";
  out += "# TYPE kiln_http_requests_total counter\n";
  for (const auto& [status, n] : by_status_)
    out += "kiln_http_requests_total{code=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP kiln_http_request_duration_seconds Time from a request's header to its answer.\n";
  out += "# TYPE kiln_http_request_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < kLatencyBounds.size(); ++b) {
    cumulative += buckets_[b];
    out += "kiln_http_request_duration_seconds_bucket{le=\"" + number(kLatencyBounds[b]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += "kiln_http_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += "kiln_http_request_duration_seconds_sum " + number(latency_sum_) + "\n";
  out += "kiln_http_request_duration_seconds_count " + std::to_string(count_) + "\n";
  gauge(out, "kiln_http_open_connections", "Open client connections.", open_connections);
  gauge(out, "kiln_http_requests_in_flight", "Admitted requests not yet answered.", in_flight);
  return out;
}

std::string batcher_prometheus_text(const BatcherStats& s) {
  std::string out;
  gauge(out, "kiln_batcher_queue_depth", "Requests waiting for a batch.", s.queued);
  counter(out, "kiln_batcher_requests_total", "Requests accepted by the batcher.", s.requests);
  counter(out, "kiln_batcher_completed_total", "Requests answered with a result.", s.completed);
  counter(out, "kiln_batcher_rejected_full_total", "Requests refused because the queue was full.", s.rejected_full);
  counter(out, "kiln_batcher_expired_total", "Requests whose deadline passed in the queue.", s.expired);
  counter(out, "kiln_batcher_failed_total", "Requests that failed with their batch.", s.failed);
  out += "# HELP kiln_batcher_batch_rows Rows of each forward pass.\n# TYPE kiln_batcher_batch_rows histogram\n";
  std::uint64_t cumulative = 0, rows = 0;
  for (std::size_t n = 1; n < s.batch_rows.size(); ++n) {
    cumulative += s.batch_rows[n];
    rows += n * s.batch_rows[n];
    out += "kiln_batcher_batch_rows_bucket{le=\"" + std::to_string(n) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += "kiln_batcher_batch_rows_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += "kiln_batcher_batch_rows_sum " + std::to_string(rows) + "\n";
  out += "kiln_batcher_batch_rows_count " + std::to_string(cumulative) + "\n";
  return out;
}

}  // namespace kiln::serve
