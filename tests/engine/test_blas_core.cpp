// OpenBLAS's kernels (devices/cpu/blas_core.h): where a DYNAMIC_ARCH OpenBLAS fell back to its
// Prescott kernels on a CPU it does not know, kiln switches it to the CPU's AVX2 or AVX-512
// ones; a CPU without AVX2, or a core OpenBLAS chose well, is left as it is.
#include <gtest/gtest.h>

#include <cblas.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/devices/cpu/blas_core.h"
#include "kiln/engine/kiln.h"
#include "support/reference.h"

namespace kiln::cpu {
namespace {

TEST(BlasCore, OldCoresOnNewCpusAreReplaced) {
  const CpuVectorFeatures avx2{.avx2_fma = true, .avx512 = false}, avx512{.avx2_fma = true, .avx512 = true}, sse{};
  EXPECT_EQ(better_blas_core("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(better_blas_core("Prescott", avx2), "Haswell");
  EXPECT_EQ(better_blas_core("Sandybridge", avx2), "Haswell");
  EXPECT_EQ(better_blas_core("NEHALEM", avx512), "SkylakeX");
  EXPECT_EQ(better_blas_core("Prescott", sse), "");  // the CPU has nothing better
  EXPECT_EQ(better_blas_core("Haswell", avx512), "");  // a modern choice stays
  EXPECT_EQ(better_blas_core("SkylakeX", avx512), "");
  EXPECT_EQ(better_blas_core("Zen", avx2), "");
  EXPECT_EQ(better_blas_core("Cooperlake", avx512), "");
  EXPECT_EQ(better_blas_core("Steamroller", avx2), "Haswell");
}

// This machine's OpenBLAS, as kiln left it when the library loaded: never a pre-AVX2 core where
// the CPU has AVX2 (unless the user chose one with OPENBLAS_CORETYPE).
TEST(BlasCore, TheRunningOpenBlasUsesTheCpusVectors) {
  if (std::getenv("OPENBLAS_CORETYPE")) GTEST_SKIP() << "OPENBLAS_CORETYPE is set: the user's choice stands";
  const std::string core = openblas_get_corename();
  EXPECT_EQ(better_blas_core(core, cpu_vector_features()), "") << "OpenBLAS runs its " << core << " kernels";
}

// A fallback to Prescott made by hand (the state OpenBLAS loads in on a CPU it does not know),
// then kiln's switch: products through kiln match a plain double-precision product with both.
TEST(BlasCore, SwitchingFromPrescottKeepsProductsRight) {
  if (std::getenv("OPENBLAS_CORETYPE")) GTEST_SKIP() << "OPENBLAS_CORETYPE is set: the user's choice stands";
  const CpuVectorFeatures features = cpu_vector_features();
  if (!features.avx2_fma) GTEST_SKIP() << "this CPU has no AVX2: OpenBLAS has nothing better than Prescott for it";
  const std::string before = openblas_get_corename();
  Generator gen(3);
  const Tensor a = randn(Shape{96, 80}, gen), b = randn(Shape{80, 72}, gen);
  // The reference is a plain product in double precision, not kiln's own.
  const std::vector<double> av = test::host_values(a), bv = test::host_values(b);
  std::vector<double> want(96 * 72, 0.0);
  for (int i = 0; i < 96; ++i)
    for (int p = 0; p < 80; ++p)
      for (int j = 0; j < 72; ++j) want[i * 72 + j] += av[i * 80 + p] * bv[p * 72 + j];

  const std::string forced = use_blas_core("Prescott");
  if (forced.empty()) GTEST_SKIP() << "this OpenBLAS is not a DYNAMIC_ARCH build: it has one set of kernels";
  ASSERT_EQ(forced, "Prescott");
  EXPECT_TRUE(test::values_close(test::host_values(matmul(a, b)), want, test::Tolerance{1e-4, 1e-4}));
  const std::string after = select_blas_core();
  EXPECT_EQ(after, features.avx512 ? "SkylakeX" : "Haswell");
  EXPECT_TRUE(test::values_close(test::host_values(matmul(a, b)), want, test::Tolerance{1e-4, 1e-4}));
  use_blas_core(before);
}

}  // namespace
}  // namespace kiln::cpu
