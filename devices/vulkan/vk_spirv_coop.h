// devices/vulkan private: SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix, on the binary.
//
// Why: Debian 12's glslang 12 compiles GL_NV_cooperative_matrix but not GL_KHR_cooperative_matrix,
// and the workgroup-scope matrices of VK_NV_cooperative_matrix2 (the driver stages the operands
// through shared memory itself) exist only for KHR types. glslang 12 accepts a workgroup scope in
// NV types, and the SPIRV-Tools of Debian 12 optimize and validate such a module; this rewrite
// then turns it into the KHR form, instruction by instruction:
//   OpCapability CooperativeMatrixNV            -> CooperativeMatrixKHR
//   OpExtension "SPV_NV_cooperative_matrix"     -> "SPV_KHR_cooperative_matrix" (and
//                                                  "SPV_NV_cooperative_matrix2" for workgroup scope)
//   OpTypeCooperativeMatrixNV T S R C           -> OpTypeCooperativeMatrixKHR T S R C Use
//   OpCooperativeMatrixLoadNV  ... P Stride Col -> OpCooperativeMatrixLoadKHR ... P Layout Stride
//   OpCooperativeMatrixStoreNV P O Stride Col   -> OpCooperativeMatrixStoreKHR P O Layout Stride
//   OpCooperativeMatrixMulAddNV / LengthNV      -> the KHR opcodes, same operands
// A type's Use (A, B or accumulator) comes from the multiply-adds it feeds; a type that is no
// operand of one is an accumulator. A type used both as A and as B (equal shapes and component
// types) cannot be given one Use: the rewrite throws, naming it. Run after validation: the
// SPIRV-Tools of Debian 12 know no KHR cooperative-matrix instruction, so the result is checked
// by the driver alone.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::vk {

struct CoopRewrite {
  // Each workgroup-scope load becomes a tensor load (SPV_NV_tensor_addressing,
  // OpCooperativeMatrixLoadTensorNV) of a layout with the matrix's dimensions and the load's row
  // stride; row-major loads only.
  bool tensor_loads = false;
  // Every matrix type of 16-bit floats becomes one of bfloat16 (SPV_KHR_bfloat16): glslang 12 has
  // no bfloat16 type, so a bf16 kernel is written with f16 matrices. Loads and stores move the
  // same 16 bits; conversions from f32 accumulators round to bfloat16.
  bool bf16_matrices = false;
};

std::vector<std::uint32_t> nv_to_khr_cooperative_matrix(const std::vector<std::uint32_t>& module,
                                                        const CoopRewrite& options = {});

}  // namespace kiln::vk
