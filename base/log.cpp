#include "kiln/base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace kiln {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("kiln");
    const char* env = std::getenv("KILN_LOG");
    l->set_level(env ? spdlog::level::from_str(env) : spdlog::level::warn);
    l->set_pattern("[kiln %l %t] %v");
    return l;
  }();
  return *instance;
}

}  // namespace kiln
