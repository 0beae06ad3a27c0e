// Whether the CPU keeps packed weights beside their buffers in this run (devices/cpu/
// packed_weights.h): the ops_unfused run turns it off with KILN_PACK_WEIGHTS=0.
#pragma once
#include <cstdlib>
#include <string_view>

namespace kiln::test {

inline bool weight_packing_on() {
  const char* v = std::getenv("KILN_PACK_WEIGHTS");
  return v == nullptr || std::string_view(v) != "0";
}

}  // namespace kiln::test
