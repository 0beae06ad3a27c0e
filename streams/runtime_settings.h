// Runtime settings of the streams and the scheduler: process-wide, read without a lock.
//   fusion           elementwise chains become fused kernels (KILN_FUSION=0 turns it off)
//   flush_threshold  with fusion on, pending ops wait for a read, a sync or this many
//                    messages before they run, so that whole chains fuse
//                    (KILN_FLUSH_THRESHOLD=n); with fusion off every op runs as it arrives
//   overlap          on a device that runs kernels on the host's cores (the CPU), independent
//                    work submitted by different threads runs side by side (KILN_OVERLAP=0
//                    runs every kernel in submission order, one at a time)
//   reader_batch_us  on the CPU, a read or sync whose stream's last batch took at most this
//                    long runs the pending work on the reading thread (Stream::submit;
//                    KILN_READER_BATCH_US=n, 0 turns it off; default 500)
//   max_in_flight_ops, max_in_flight_bytes
//                    flow control (streams/flow_control.h): a stream holds at most this many
//                    messages, and this many bytes of their outputs, submitted and not yet run;
//                    a submitter past either waits (0: no bound on that measure;
//                    KILN_MAX_IN_FLIGHT_OPS=n, KILN_MAX_IN_FLIGHT_MB=n)
//   error_when_full  a submitter past the bound gets a kiln::Error instead of waiting
//                    (KILN_WHEN_FULL=error)
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kiln {

struct RuntimeSettings {
  std::atomic<bool> fusion{true};
  std::atomic<std::size_t> flush_threshold{512};
  std::atomic<bool> overlap{true};
  std::atomic<std::uint64_t> reader_batch_us{500};
  std::atomic<std::uint64_t> max_in_flight_ops{kDefaultMaxInFlightOps};
  std::atomic<std::uint64_t> max_in_flight_bytes{kDefaultMaxInFlightBytes};
  std::atomic<bool> error_when_full{false};

  static constexpr std::uint64_t kDefaultMaxInFlightOps = 4096;
  static constexpr std::uint64_t kDefaultMaxInFlightBytes = std::uint64_t{1} << 30;

  static RuntimeSettings& get();  // first call reads the environment
};

}  // namespace kiln
