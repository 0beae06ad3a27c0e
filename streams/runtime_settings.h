// Runtime settings of the streams and the scheduler: process-wide, read without a lock.
//   fusion           elementwise chains become fused kernels (KILN_FUSION=0 turns it off)
//   flush_threshold  with fusion on, pending ops wait for a read, a sync or this many
//                    messages before they run, so that whole chains fuse
//                    (KILN_FLUSH_THRESHOLD=n); with fusion off every op runs as it arrives
//   overlap          on a device that runs kernels on the host's cores (the CPU), independent
//                    work submitted by different threads runs side by side (KILN_OVERLAP=0
//                    runs every kernel in submission order, one at a time)
#pragma once
#include <atomic>
#include <cstddef>

namespace kiln {

struct RuntimeSettings {
  std::atomic<bool> fusion{true};
  std::atomic<std::size_t> flush_threshold{512};
  std::atomic<bool> overlap{true};

  static RuntimeSettings& get();  // first call reads the environment
};

}  // namespace kiln
