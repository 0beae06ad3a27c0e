// Runtime settings of the streams and the scheduler: process-wide, read without a lock.
//   fusion           elementwise chains become fused kernels (KILN_FUSION=0 turns it off)
//   flush_threshold  with fusion on, pending ops wait for a read, a sync or this many
//                    messages before they run, so that whole chains fuse
//                    (KILN_FLUSH_THRESHOLD=n); with fusion off every op runs as it arrives
#pragma once
#include <atomic>
#include <cstddef>

namespace kiln {

struct RuntimeSettings {
  std::atomic<bool> fusion{true};
  std::atomic<std::size_t> flush_threshold{512};

  static RuntimeSettings& get();  // first call reads the environment
};

}  // namespace kiln
