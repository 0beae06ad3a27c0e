// kiln's logger (spdlog): quiet by default; KILN_LOG=debug (or info, trace, warn) shows what the
// scheduler decides. Call sites check should_log first so a quiet build pays one branch.
#pragma once
#include <spdlog/spdlog.h>

namespace kiln {

spdlog::logger& logger();
inline bool log_enabled(spdlog::level::level_enum level) { return logger().should_log(level); }

}  // namespace kiln
