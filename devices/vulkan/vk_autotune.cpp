#include "kiln/devices/vulkan/vk_autotune.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/devices/vulkan/vk_cache_file.h"
#include "kiln/base/log.h"

namespace kiln::vk {

namespace {

namespace fs = std::filesystem;

constexpr const char* kHeader = "# kiln autotune v1";

void warn(const std::string& what) {
  if (log_enabled(spdlog::level::warn)) logger().warn("vulkan autotune cache: {}", what);
}

}  // namespace

AutotuneCache::AutotuneCache(std::string file, std::string device_tag)
    : file_(std::move(file)), tag_(std::move(device_tag)) {
  choices_ = read_file();
}

std::map<std::string, std::string> AutotuneCache::read_file() const {
  std::map<std::string, std::string> out;
  if (file_.empty()) return out;
  std::ifstream in(file_);
  if (!in) return out;
  std::string line;
  if (!std::getline(in, line) || line != kHeader) return out;
  if (!std::getline(in, line) || line != "# device " + tag_) return out;
  while (std::getline(in, line)) {
    // "<shape class> <choice>": the class may hold spaces, the choice does not.
    const auto space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos || space == 0 || space + 1 == line.size())
      continue;
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

std::optional<std::string> AutotuneCache::lookup(const std::string& shape_class) const {
  std::lock_guard lock(mutex_);
  const auto it = choices_.find(shape_class);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

void AutotuneCache::store(const std::string& shape_class, const std::string& choice) {
  std::lock_guard lock(mutex_);
  choices_[shape_class] = choice;
  if (file_.empty()) return;
  std::map<std::string, std::string> merged = read_file();
  for (const auto& [k, v] : choices_) merged[k] = v;
  std::ostringstream text;
  text << kHeader << "\n# device " << tag_ << "\n";
  for (const auto& [k, v] : merged) text << k << ' ' << v << '\n';
  const std::string body = text.str();
  if (const std::string why = write_cache_file(file_, body.data(), body.size()); !why.empty()) warn(why);
}

bool autotune_enabled(bool software_device) {
  if (const char* env = std::getenv("KILN_AUTOTUNE"); env && *env) return std::string(env) != "0";
  return !software_device;
}

std::uint64_t size_bucket(std::uint64_t n) {
  std::uint64_t b = 1;
  while (b < n && b < (1ull << 20)) b <<= 1;
  return b;
}

}  // namespace kiln::vk
