#include "kiln/train/process_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace kiln::train {

std::optional<double> resident_mib() {
  // /proc/self/statm: sizes in pages; the second is the resident set.
  std::ifstream statm("/proc/self/statm");
  long long total = 0, resident = 0;
  if (!(statm >> total >> resident)) return std::nullopt;
  const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<double>(resident) * static_cast<double>(page) / (1 << 20);
}

std::optional<double> peak_resident_mib() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return std::nullopt;
  return static_cast<double>(usage.ru_maxrss) / 1024;  // KiB on Linux
}

}  // namespace kiln::train
