// The SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix rewrite (vk_spirv_coop.h), checked
// word by word against the instruction layouts of the SPIR-V registry (SPV_KHR_cooperative_matrix:
// OpTypeCooperativeMatrixKHR 4456 = Result, Component Type, Scope, Rows, Columns, Use;
// OpCooperativeMatrixLoadKHR 4457 = Result Type, Result, Pointer, MemoryLayout, Stride, ...;
// OpCooperativeMatrixStoreKHR 4458 = Pointer, Object, MemoryLayout, Stride, ...; MulAdd 4459).
// No device is needed: glslang and SPIRV-Tools run on the host. That the driver accepts the result
// is checked where one has the extension (VulkanMatmul.EveryWorkgroupCooperativeMatrixConfiguration...).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_shader.h"
#include "kiln/devices/vulkan/vk_spirv_coop.h"
#include "kiln/base/error.h"

namespace kiln::test {
namespace {

struct Module {
  std::vector<std::vector<std::uint32_t>> insts;
  std::uint32_t bound = 0;
  std::map<std::uint32_t, std::uint32_t> constant;  // id -> value of a 32-bit OpConstant
  std::map<std::uint32_t, std::uint32_t> float_width;  // OpTypeFloat id -> width
  std::map<std::uint32_t, std::size_t> defined_at;   // result id -> instruction index

  explicit Module(const std::vector<std::uint32_t>& words) {
    bound = words.at(3);
    for (std::size_t w = 5; w < words.size(); w += words[w] >> 16) {
      const std::size_t n = words[w] >> 16;
      if (n == 0 || w + n > words.size()) throw std::runtime_error("malformed module");
      insts.emplace_back(words.begin() + static_cast<std::ptrdiff_t>(w), words.begin() + static_cast<std::ptrdiff_t>(w + n));
      const auto& i = insts.back();
      const std::uint32_t op = i[0] & 0xffff;
      if (op == 43 && n == 4) constant[i[2]] = i[3];
      if (op == 22) float_width[i[1]] = i[2];
      if (op == 4456 || op == 22 || op == 21 || op == 20) defined_at[i[1]] = insts.size() - 1;
      if (op == 43 || op == 41 || op == 42) defined_at[i[2]] = insts.size() - 1;
    }
  }
  std::vector<std::vector<std::uint32_t>> with(std::uint32_t op) const {
    std::vector<std::vector<std::uint32_t>> out;
    for (const auto& i : insts)
      if ((i[0] & 0xffff) == op) out.push_back(i);
    return out;
  }
  std::vector<std::string> extensions() const {
    std::vector<std::string> out;
    for (const auto& i : with(10)) out.emplace_back(reinterpret_cast<const char*>(i.data() + 1));
    return out;
  }
};

constexpr const char* kHeader = R"(#version 460
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer H { float16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer F { float v[]; };
layout(push_constant) uniform P { H a; H b; F c; uint K; } p;
)";

// A (64 x 32) row-major with stride K, times B (32 x 128) loaded by `b_load`, into a 64 x 128
// accumulator.
std::string product(const std::string& b_load) {
  return R"(
void main() {
  fcoopmatNV<32, gl_ScopeWorkgroup, 64, 128> acc = fcoopmatNV<32, gl_ScopeWorkgroup, 64, 128>(0.0);
  for (uint k = 0u; k < p.K; k += 32u) {
    fcoopmatNV<16, gl_ScopeWorkgroup, 64, 32> a;
    fcoopmatNV<16, gl_ScopeWorkgroup, 32, 128> b;
    coopMatLoadNV(a, p.a.v, k, p.K, false);
    )" + b_load + R"(
    acc = coopMatMulAddNV(a, b, acc);
  }
  coopMatStoreNV(acc, p.c.v, 0u, 128u, false);
}
)";
}
const std::string kColumnMajorB = "coopMatLoadNV(b, p.b.v, k, 96u, true);";
const std::string kRowMajorB = "coopMatLoadNV(b, p.b.v, k * 96u, 96u, false);";

TEST(SpirvCooperativeMatrix, NvBecomesKhrWithUsesAndLayouts) {
  const std::string source = std::string(kHeader) + vk::kKhrCooperativeMatrixMarker + product(kColumnMajorB);
  const Module m(vk::compile_glsl("coop rewrite test", source));

  for (std::uint32_t nv = 5357; nv <= 5362; ++nv) EXPECT_TRUE(m.with(nv).empty()) << "NV opcode " << nv << " left";
  bool khr_capability = false;
  for (const auto& i : m.with(17)) {
    EXPECT_NE(i[1], 5357u) << "CooperativeMatrixNV capability left";
    khr_capability |= i[1] == 6022u;
  }
  EXPECT_TRUE(khr_capability);
  const auto ext = m.extensions();
  EXPECT_EQ(std::count(ext.begin(), ext.end(), "SPV_KHR_cooperative_matrix"), 1);
  EXPECT_EQ(std::count(ext.begin(), ext.end(), "SPV_NV_cooperative_matrix2"), 1);  // workgroup scope
  EXPECT_EQ(std::count(ext.begin(), ext.end(), "SPV_NV_cooperative_matrix"), 0);

  // Each type: component width, scope, rows, columns -> its use; operands defined before it.
  std::map<std::uint32_t, std::vector<std::uint32_t>> types;  // id -> {width, scope, rows, cols, use}
  for (const auto& i : m.with(4456)) {
    ASSERT_EQ(i.size(), 7u);
    for (std::size_t w = 2; w < 7; ++w) {
      ASSERT_TRUE(m.defined_at.count(i[w])) << "operand %" << i[w] << " of type %" << i[1] << " undefined";
      EXPECT_LT(m.defined_at.at(i[w]), m.defined_at.at(i[1])) << "operand %" << i[w] << " defined after its use";
    }
    types[i[1]] = {m.float_width.at(i[2]), m.constant.at(i[3]), m.constant.at(i[4]), m.constant.at(i[5]),
                   m.constant.at(i[6])};
  }
  std::vector<std::vector<std::uint32_t>> described;
  for (const auto& [id, d] : types) described.push_back(d);
  std::sort(described.begin(), described.end());
  const std::vector<std::vector<std::uint32_t>> expected = {
      {16, 2, 32, 128, 1},  // B
      {16, 2, 64, 32, 0},   // A
      {32, 2, 64, 128, 2},  // accumulator
  };
  EXPECT_EQ(described, expected);

  // Loads: layout before stride; A row-major with stride K, B column-major with stride 96.
  const auto loads = m.with(4457);
  ASSERT_EQ(loads.size(), 2u);
  for (const auto& l : loads) {
    ASSERT_GE(l.size(), 6u);
    const std::uint32_t use = types.at(l[1])[4];
    if (use == 0) {
      EXPECT_EQ(m.constant.at(l[4]), 0u);             // RowMajorKHR
      EXPECT_FALSE(m.constant.count(l[5]));            // p.K: a value, not a constant
    } else {
      EXPECT_EQ(use, 1u);
      EXPECT_EQ(m.constant.at(l[4]), 1u);             // ColumnMajorKHR
      EXPECT_EQ(m.constant.at(l[5]), 96u);
    }
    EXPECT_EQ(l.size(), 8u);  // Aligned 16 kept
    if (l.size() == 8) {
      EXPECT_EQ(l[6], 2u);  // MemoryAccess Aligned
      EXPECT_EQ(l[7], 16u);
    }
  }
  const auto stores = m.with(4458);
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(m.constant.at(stores[0][3]), 0u);
  EXPECT_EQ(m.constant.at(stores[0][4]), 128u);
  const auto products = m.with(4459);
  ASSERT_EQ(products.size(), 1u);
  EXPECT_EQ(types.at(products[0][1])[4], 2u);

  for (const auto& i : m.insts) {  // every constant's id fits the header's bound
    if ((i[0] & 0xffff) == 43) {
      EXPECT_LT(i[2], m.bound);
    }
  }
}

// Tensor loads (SPV_NV_tensor_addressing: OpTypeTensorLayoutNV 5370 = Result, Dim, ClampMode;
// OpCreateTensorLayoutNV 5372; OpTensorLayoutSetDimensionNV 5373 and SetStrideNV 5374 = Result
// Type, Result, Layout, values...; OpCooperativeMatrixLoadTensorNV 5367 = Result Type, Result,
// Pointer, Object, TensorLayout, Memory Operand, Tensor Addressing Operands).
TEST(SpirvCooperativeMatrix, WorkgroupLoadsBecomeTensorLoadsOfTheirTile) {
  const std::string source =
      std::string(kHeader) + vk::kKhrCooperativeMatrixMarker + vk::kTensorLoadsMarker + product(kRowMajorB);
  const Module m(vk::compile_glsl("coop rewrite test", source));
  EXPECT_TRUE(m.with(4457).empty());
  const auto ext = m.extensions();
  EXPECT_EQ(std::count(ext.begin(), ext.end(), "SPV_NV_tensor_addressing"), 1);
  std::vector<std::uint32_t> caps;
  for (const auto& i : m.with(17)) caps.push_back(i[1]);
  EXPECT_EQ(std::count(caps.begin(), caps.end(), 5439u), 1);  // TensorAddressingNV
  EXPECT_EQ(std::count(caps.begin(), caps.end(), 5433u), 1);  // CooperativeMatrixTensorAddressingNV

  const auto layout_types = m.with(5370);
  ASSERT_EQ(layout_types.size(), 1u);
  EXPECT_EQ(m.constant.at(layout_types[0][2]), 2u);  // two dimensions
  EXPECT_EQ(m.constant.at(layout_types[0][3]), 0u);  // no clamping
  std::map<std::uint32_t, std::vector<std::uint32_t>> by_result;  // value instructions by result id
  std::map<std::uint32_t, std::size_t> index;
  for (std::size_t n = 0; n < m.insts.size(); ++n) {
    const auto& i = m.insts[n];
    if (i.size() >= 3) by_result[i[2]] = i, index[i[2]] = n;
  }
  std::map<std::uint32_t, std::vector<std::uint32_t>> matrix;  // type id -> its instruction
  for (const auto& t : m.with(4456)) matrix[t[1]] = t;
  const auto loads = m.with(5367);
  ASSERT_EQ(loads.size(), 2u);
  std::vector<std::uint32_t> strides_seen;
  for (const auto& l : loads) {
    ASSERT_EQ(l.size(), 9u);  // ..., Aligned 16, tensor operands None
    EXPECT_EQ(l[6], 2u);
    EXPECT_EQ(l[7], 16u);
    EXPECT_EQ(l[8], 0u);
    const auto& type = matrix.at(l[1]);
    EXPECT_EQ((by_result.at(l[4])[0] & 0xffff), 1u);  // Object: an OpUndef
    EXPECT_EQ(by_result.at(l[4])[1], l[1]);           // of the loaded type
    const auto& stride = by_result.at(l[5]);
    ASSERT_EQ(stride[0] & 0xffff, 5374u);
    EXPECT_EQ(stride[1], layout_types[0][1]);
    EXPECT_EQ(m.constant.at(stride[5]), 1u);  // unit column stride
    strides_seen.push_back(m.constant.count(stride[4]) ? m.constant.at(stride[4]) : 0u);
    const auto& dims = by_result.at(stride[3]);
    ASSERT_EQ(dims[0] & 0xffff, 5373u);
    EXPECT_EQ(dims[4], type[4]);  // the matrix's rows
    EXPECT_EQ(dims[5], type[5]);  // and columns
    EXPECT_EQ(by_result.at(dims[3])[0] & 0xffff, 5372u);
    EXPECT_LT(index.at(l[5]), index.at(l[2]));
  }
  std::sort(strides_seen.begin(), strides_seen.end());
  EXPECT_EQ(strides_seen, (std::vector<std::uint32_t>{0u, 96u}));  // p.K (a value) for A, 96 for B
}

// bfloat16 (SPV_KHR_bfloat16: OpTypeFloat 22 = Result, Width, FP Encoding, BFloat16KHR = 0;
// capabilities BFloat16TypeKHR 5116, BFloat16CooperativeMatrixKHR 5118): the 16-bit matrix types
// take a new bfloat16 component, the f32 accumulator keeps its own.
TEST(SpirvCooperativeMatrix, Bf16MatricesReplaceTheHalfOnes) {
  const std::string source =
      std::string(kHeader) + vk::kKhrCooperativeMatrixMarker + vk::kBf16MatricesMarker + product(kRowMajorB);
  const Module m(vk::compile_glsl("coop rewrite test", source));
  std::uint32_t bf16 = 0, half = 0;
  for (const auto& i : m.with(22)) {
    if (i.size() == 4 && i[2] == 16 && i[3] == 0) bf16 = i[1];
    if (i.size() == 3 && i[2] == 16) half = i[1];
  }
  ASSERT_NE(bf16, 0u);
  EXPECT_NE(half, 0u);  // still there for the buffers' f16 arrays
  std::size_t bf16_matrices = 0;
  for (const auto& t : m.with(4456)) {
    const std::uint32_t use = m.constant.at(t[6]);
    if (use == 2) {
      EXPECT_EQ(m.float_width.at(t[2]), 32u);  // the accumulator
    } else {
      EXPECT_EQ(t[2], bf16);
      EXPECT_LT(m.defined_at.at(bf16), m.defined_at.at(t[1]));  // declared before its use
      ++bf16_matrices;
    }
  }
  EXPECT_EQ(bf16_matrices, 2u);
  std::vector<std::uint32_t> caps;
  for (const auto& i : m.with(17)) caps.push_back(i[1]);
  EXPECT_EQ(std::count(caps.begin(), caps.end(), 5116u), 1);
  EXPECT_EQ(std::count(caps.begin(), caps.end(), 5118u), 1);
  const auto ext = m.extensions();
  EXPECT_EQ(std::count(ext.begin(), ext.end(), "SPV_KHR_bfloat16"), 1);
}

TEST(SpirvCooperativeMatrix, AMatrixTypeUsedAsBothOperandsIsRefused) {
  const std::string source = std::string(kHeader) + vk::kKhrCooperativeMatrixMarker + R"(
void main() {
  fcoopmatNV<32, gl_ScopeWorkgroup, 32, 32> acc = fcoopmatNV<32, gl_ScopeWorkgroup, 32, 32>(0.0);
  fcoopmatNV<16, gl_ScopeWorkgroup, 32, 32> a, b;
  coopMatLoadNV(a, p.a.v, 0u, 32u, false);
  coopMatLoadNV(b, p.b.v, 0u, 32u, false);
  acc = coopMatMulAddNV(a, b, acc);
  coopMatStoreNV(acc, p.c.v, 0u, 32u, false);
}
)";
  try {
    (void)vk::compile_glsl("coop rewrite test", source);
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("used both as"), std::string::npos) << e.what();
  }
}

TEST(SpirvCooperativeMatrix, ModulesWithoutTheMarkerAreLeftInNvForm) {
  const Module m(vk::compile_glsl("coop rewrite test", std::string(kHeader) + product(kColumnMajorB)));
  EXPECT_EQ(m.with(4456).size(), 0u);
  EXPECT_EQ(m.with(5358).size(), 3u);
  EXPECT_THROW((void)vk::nv_to_khr_cooperative_matrix({1, 2, 3}), Error);
}

}  // namespace
}  // namespace kiln::test
