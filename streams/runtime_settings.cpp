#include "kiln/streams/runtime_settings.h"

#include <cstdlib>
#include <string>

namespace kiln {

RuntimeSettings& RuntimeSettings::get() {
  static RuntimeSettings* settings = [] {
    auto* s = new RuntimeSettings();  // never destroyed: handles may outlive static teardown
    if (const char* f = std::getenv("KILN_FUSION")) s->fusion = std::string(f) != "0";
    if (const char* o = std::getenv("KILN_OVERLAP")) s->overlap = std::string(o) != "0";
    if (const char* t = std::getenv("KILN_FLUSH_THRESHOLD")) {
      const long n = std::strtol(t, nullptr, 10);
      if (n > 0) s->flush_threshold = static_cast<std::size_t>(n);
    }
    if (const char* r = std::getenv("KILN_READER_BATCH_US")) {
      const long us = std::strtol(r, nullptr, 10);
      if (us >= 0) s->reader_batch_us = static_cast<std::uint64_t>(us);
    }
    if (const char* n = std::getenv("KILN_MAX_IN_FLIGHT_OPS")) {
      const long long ops = std::strtoll(n, nullptr, 10);
      if (ops >= 0) s->max_in_flight_ops = static_cast<std::uint64_t>(ops);
    }
    if (const char* m = std::getenv("KILN_MAX_IN_FLIGHT_MB")) {
      const long long mb = std::strtoll(m, nullptr, 10);
      if (mb >= 0) s->max_in_flight_bytes = static_cast<std::uint64_t>(mb) << 20;
    }
    if (const char* w = std::getenv("KILN_WHEN_FULL")) s->error_when_full = std::string(w) == "error";
    return s;
  }();
  return *settings;
}

}  // namespace kiln
