#include "kiln/devices/cpu/blas_core.h"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <cstdlib>

#include "kiln/base/log.h"

// OpenBLAS's own selection (driver/others/dynamic.c), exported by DYNAMIC_ARCH builds only:
// weak, so that a build against another OpenBLAS links and keeps its kernels.
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace kiln::cpu {

CpuVectorFeatures cpu_vector_features() {
  __builtin_cpu_init();
  CpuVectorFeatures f;
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  return f;
}

std::string better_blas_core(const std::string& chosen, CpuVectorFeatures features) {
  // OpenBLAS's x86-64 cores without AVX2 kernels (names as openblas_get_corename gives them).
  static constexpr const char* kPreAvx2[] = {"prescott",  "core2",      "penryn",    "dunnington", "nehalem",
                                             "sandybridge", "atom",     "katmai",    "coppermine", "northwood",
                                             "banias",    "opteron",    "barcelona", "bobcat",     "bulldozer",
                                             "piledriver", "steamroller"};
  std::string name = chosen;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool old = std::find(std::begin(kPreAvx2), std::end(kPreAvx2), name) != std::end(kPreAvx2);
  if (!old || !features.avx2_fma) return "";
  return features.avx512 ? "SkylakeX" : "Haswell";
}

std::string use_blas_core(const std::string& core) {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) return "";
  // dynamic.c re-selects through OPENBLAS_CORETYPE when its table is cleared; the variable is
  // removed again so that child processes choose for themselves.
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
  return openblas_get_corename();
}

std::string select_blas_core() {
  const std::string chosen = openblas_get_corename();
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (user && *user) return chosen;
  const std::string better = better_blas_core(chosen, cpu_vector_features());
  if (better.empty()) return chosen;
  const std::string now = use_blas_core(better);
  if (now.empty()) return chosen;
  if (log_enabled(spdlog::level::info))
    logger().info("OpenBLAS chose its {} kernels for this CPU (a model it does not know); now runs {}", chosen, now);
  return now;
}

}  // namespace kiln::cpu
