#include "kiln/devices/vulkan/vk_cache_file.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>

namespace kiln::vk {

namespace fs = std::filesystem;

std::string write_cache_file(const fs::path& file, const void* data, std::size_t bytes) {
  static std::atomic<std::uint64_t> written{0};
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp =
      file.string() + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(written.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    if (!out) {
      fs::remove(tmp, ec);
      return "cannot write " + tmp.string();
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    const std::string why = "cannot write " + file.string() + ": " + ec.message();
    fs::remove(tmp, ec);
    return why;
  }
  return {};
}

}  // namespace kiln::vk
