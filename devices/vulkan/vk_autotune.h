// devices/vulkan private: the autotuner's memory. A kernel family with several configurations
// (the tiled matmul) times them on the first use of a shape class and keeps the fastest one's
// name here: in memory, and in a small text file in the device's pipeline-cache directory
// (already one per device name, ids and driver version; the file repeats the device's tag and
// is ignored when it does not match). Lines are "<shape class> <config name>"; unknown names
// are the caller's to ignore (a later kiln may have other configurations). Disk failures are
// logged, never raised. Autotuning is off with KILN_AUTOTUNE=0 and on software devices
// (lavapipe: KILN_AUTOTUNE=1 forces it on), which then use a heuristic choice.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace kiln::vk {

class AutotuneCache {
 public:
  // `file` empty: memory only. `device_tag` identifies the device and driver.
  AutotuneCache(std::string file, std::string device_tag);

  std::optional<std::string> lookup(const std::string& shape_class) const;
  // Remembers a choice and rewrites the file (merged with entries other processes added).
  void store(const std::string& shape_class, const std::string& choice);
  const std::string& file() const { return file_; }

 private:
  std::map<std::string, std::string> read_file() const;

  std::string file_;
  std::string tag_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> choices_;
};

// Whether to time configurations at all: KILN_AUTOTUNE=0 / 1 decides, else all but software
// devices do.
bool autotune_enabled(bool software_device);

// Power-of-two bucket of a size (1, 2, 4, ..., capped at 2^20): shapes of one bucket share a choice.
std::uint64_t size_bucket(std::uint64_t n);

}  // namespace kiln::vk
