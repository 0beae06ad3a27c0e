// devices/vulkan private: GLSL -> SPIR-V. glslang compiles for Vulkan 1.2 / SPIR-V 1.5, the
// SPIRV-Tools optimizer runs its performance passes (unless told not to), and the validator
// checks the result. A failure throws kiln::Error naming the kernel, with glslang's log and the
// numbered source.
// A kernel whose source holds kKhrCooperativeMatrixMarker is written with GL_NV_cooperative_matrix
// and comes back in SPV_KHR_cooperative_matrix form (vk_spirv_coop.h), after validation.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::vk {

inline constexpr const char* kKhrCooperativeMatrixMarker = "#define KILN_KHR_COOPERATIVE_MATRIX 1\n";
// With it, workgroup-scope matrix loads also become tensor loads (vk_spirv_coop.h).
inline constexpr const char* kTensorLoadsMarker = "#define KILN_TENSOR_LOADS 1\n";
// With it, the kernel's f16 matrices become bf16 ones (vk_spirv_coop.h).
inline constexpr const char* kBf16MatricesMarker = "#define KILN_BF16_MATRICES 1\n";

// A GLSL uint literal: "64u".
inline std::string glsl_uint(std::uint32_t v) { return std::to_string(v) + "u"; }

// Whether SPIRV-Tools' performance passes run on a kernel. `none` is for drivers that optimize
// everything themselves with a full compiler (software devices: lavapipe's LLVM), where the
// passes only cost compile time (vk_pipeline_cache.h says how much).
enum class SpirvOptimizer { performance, none };

std::vector<std::uint32_t> compile_glsl(const std::string& kernel_name, const std::string& source,
                                        SpirvOptimizer optimizer = SpirvOptimizer::performance);

}  // namespace kiln::vk
