// Which kernels OpenBLAS runs. A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels by the CPU's
// family and model when it loads; a model newer than its table (Debian 12 ships 0.3.21: no
// Sapphire or Emerald Rapids) or a virtual CPU with a generic model falls back to the Prescott
// kernels (SSE3), several times slower than the CPU's AVX2 or AVX-512 ones: on a 16-core cloud
// Xeon every sgemm ran sgemm_kernel_PRESCOTT. kiln then selects the kernels by the CPU's
// features instead, as OPENBLAS_CORETYPE would, once, before its first BLAS call. A user's own
// OPENBLAS_CORETYPE is left alone.
#pragma once
#include <string>

namespace kiln::cpu {

struct CpuVectorFeatures {
  bool avx2_fma = false;  // AVX2 and FMA: OpenBLAS's Haswell kernels
  bool avx512 = false;    // AVX-512 F, CD, BW, DQ and VL: its SkylakeX kernels
};

CpuVectorFeatures cpu_vector_features();

// The OpenBLAS core to switch to when OpenBLAS chose `chosen` (openblas_get_corename()) on a CPU
// with `features`, or "" to keep it: only a core without AVX2 on a CPU that has it.
std::string better_blas_core(const std::string& chosen, CpuVectorFeatures features);

// Makes a DYNAMIC_ARCH OpenBLAS select `core` (an OPENBLAS_CORETYPE name) as it does when it
// loads with OPENBLAS_CORETYPE set, and returns the core it runs afterwards; "" where the
// library cannot switch (not a DYNAMIC_ARCH build). Call it as select_blas_core: no BLAS call
// running, no other thread reading the environment.
std::string use_blas_core(const std::string& core);

// Applies better_blas_core to the running OpenBLAS (unless OPENBLAS_CORETYPE is set, or the
// library cannot switch: not a DYNAMIC_ARCH build). Returns the core OpenBLAS runs afterwards.
// Call before any BLAS call, with no other thread running (it sets an environment variable):
// devices/cpu/kernels_linalg.cpp does when the library loads.
std::string select_blas_core();

}  // namespace kiln::cpu
