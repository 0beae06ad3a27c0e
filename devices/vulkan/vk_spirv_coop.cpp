#include "kiln/devices/vulkan/vk_spirv_coop.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/error.h"

namespace kiln::vk {

namespace {

// Opcodes and enumerants of the SPIR-V specification and its cooperative-matrix extensions
// (Debian 12's spirv headers predate the KHR ones).
enum : std::uint32_t {
  kOpExtension = 10,
  kOpCapability = 17,
  kOpTypeInt = 21,
  kOpConstantTrue = 41,
  kOpConstantFalse = 42,
  kOpConstant = 43,
  kOpTypeCoopNV = 5358,
  kOpLoadNV = 5359,
  kOpStoreNV = 5360,
  kOpMulAddNV = 5361,
  kOpLengthNV = 5362,
  kOpTypeCoopKHR = 4456,
  kOpLoadKHR = 4457,
  kOpStoreKHR = 4458,
  kOpMulAddKHR = 4459,
  kOpLengthKHR = 4460,
  kCapCoopNV = 5357,
  kCapCoopKHR = 6022,
  kScopeSubgroup = 3,
  kScopeWorkgroup = 2,
  // SPV_NV_tensor_addressing and SPV_NV_cooperative_matrix2's tensor loads.
  kOpUndef = 1,
  kOpLoadTensorNV = 5367,
  kOpTypeTensorLayoutNV = 5370,
  kOpCreateTensorLayoutNV = 5372,
  kOpTensorLayoutSetDimensionNV = 5373,
  kOpTensorLayoutSetStrideNV = 5374,
  kCapCoopTensorAddressingNV = 5433,
  kCapTensorAddressingNV = 5439,
  kClampUndefined = 0,
  // SPV_KHR_bfloat16.
  kOpTypeFloat = 22,
  kCapBFloat16Type = 5116,
  kCapBFloat16CooperativeMatrix = 5118,
  kEncodingBFloat16 = 0,
};
enum Use : std::uint32_t { kUseA = 0, kUseB = 1, kUseAccumulator = 2, kUnassigned = 99 };
enum Layout : std::uint32_t { kRowMajor = 0, kColumnMajor = 1 };

using Inst = std::vector<std::uint32_t>;  // one instruction, its first word included

std::uint32_t opcode(const Inst& i) { return i[0] & 0xffffu; }

Inst make(std::uint32_t op, std::vector<std::uint32_t> operands) {
  Inst i{0};
  i.insert(i.end(), operands.begin(), operands.end());
  i[0] = static_cast<std::uint32_t>(i.size()) << 16 | op;
  return i;
}

Inst extension(const std::string& name) {
  std::vector<std::uint32_t> words(name.size() / 4 + 1, 0u);  // nul-terminated, zero-padded
  for (std::size_t c = 0; c < name.size(); ++c)
    words[c / 4] |= static_cast<std::uint32_t>(static_cast<unsigned char>(name[c])) << (8 * (c % 4));
  return make(kOpExtension, words);
}

std::string literal_string(const Inst& i, std::size_t first) {
  std::string s;
  for (std::size_t w = first; w < i.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((i[w] >> (8 * b)) & 0xffu);
      if (c == 0) return s;
      s += c;
    }
  return s;
}

// Instructions whose words 1 and 2 are a result type and a result id, and which may produce a
// cooperative matrix in code that glslang and SPIRV-Tools write for our kernels.
bool defines_typed_value(std::uint32_t op) {
  static const std::unordered_set<std::uint32_t> ops = {
      1,   // OpUndef
      43,  // OpConstant
      44,  // OpConstantComposite
      46,  // OpConstantNull
      61,  // OpLoad
      80,  // OpCompositeConstruct
      81,  // OpCompositeExtract
      82,  // OpCompositeInsert
      83,  // OpCopyObject
      115, 116, 117, 118, 119, 120, 121, 122, 123, 124,  // conversions
      127, 129, 131, 133, 136, 142, 143,                 // FNegate, FAdd, FSub, FMul, FDiv, VectorTimesScalar, MatrixTimesScalar
      169,  // OpSelect
      245,  // OpPhi
      kOpLoadNV, kOpMulAddNV, kOpLengthNV,
  };
  return ops.count(op) != 0;
}

std::string id_name(std::uint32_t id) { return "%" + std::to_string(id); }

}  // namespace

std::vector<std::uint32_t> nv_to_khr_cooperative_matrix(const std::vector<std::uint32_t>& module,
                                                        const CoopRewrite& options) {
  const bool tensor_loads = options.tensor_loads;
  const char* kOp = "spirv cooperative matrix rewrite";
  KILN_CHECK(module.size() >= 5 && module[0] == 0x07230203u, kOp, "not a SPIR-V module");
  std::vector<Inst> insts;
  for (std::size_t w = 5; w < module.size();) {
    const std::uint32_t count = module[w] >> 16;
    KILN_CHECK(count > 0 && w + count <= module.size(), kOp, "truncated instruction at word " + std::to_string(w));
    insts.emplace_back(module.begin() + static_cast<std::ptrdiff_t>(w),
                       module.begin() + static_cast<std::ptrdiff_t>(w + count));
    w += count;
  }
  std::uint32_t bound = module[3];

  // What the rewrite reads: matrix types, value types, constants.
  std::unordered_map<std::uint32_t, std::uint32_t> type_of;      // value id -> type id
  std::unordered_map<std::uint32_t, std::uint32_t> use_of;       // NV matrix type -> Use
  std::unordered_map<std::uint32_t, std::uint32_t> scope_of;     // NV matrix type -> scope
  std::unordered_map<std::uint32_t, bool> bool_constant;         // id -> value
  std::unordered_map<std::uint32_t, std::uint32_t> uint_constant;  // id -> value (32-bit unsigned)
  std::unordered_map<std::uint32_t, std::uint32_t> constant_id;    // value 0..2 -> an id defined before every matrix type
  std::uint32_t uint_type = 0, half_type = 0;
  bool workgroup_scope = false, seen_matrix_type = false;
  for (const Inst& i : insts) {
    const std::uint32_t op = opcode(i);
    if (op == kOpTypeInt && i.size() == 4 && i[2] == 32 && i[3] == 0) uint_type = i[1];
    if (op == kOpTypeFloat && i.size() == 3 && i[2] == 16) half_type = i[1];
    if (op == kOpConstantTrue || op == kOpConstantFalse) bool_constant[i[2]] = op == kOpConstantTrue;
    if (op == kOpConstant && i.size() == 4 && i[1] == uint_type) {
      uint_constant[i[2]] = i[3];
      if (i[3] <= 2 && !seen_matrix_type && !constant_id.count(i[3])) constant_id[i[3]] = i[2];
    }
    if (op == kOpTypeCoopNV) {
      seen_matrix_type = true;
      use_of[i[1]] = kUnassigned;
      const auto scope = uint_constant.find(i[3]);
      KILN_CHECK(scope != uint_constant.end(), kOp, "the scope of matrix type " + id_name(i[1]) + " is no constant");
      workgroup_scope |= scope->second != kScopeSubgroup;
      scope_of[i[1]] = scope->second;
    }
    if (i.size() >= 3 && defines_typed_value(op)) type_of[i[2]] = i[1];
  }
  KILN_CHECK(uint_type != 0, kOp, "the module has no 32-bit unsigned integer type");

  auto assign = [&](std::uint32_t value_or_type, bool is_type, Use use) {
    std::uint32_t type = value_or_type;
    if (!is_type) {
      const auto t = type_of.find(value_or_type);
      KILN_CHECK(t != type_of.end(), kOp, "cannot tell the type of multiply-add operand " + id_name(value_or_type));
      type = t->second;
    }
    auto u = use_of.find(type);
    KILN_CHECK(u != use_of.end(), kOp, "multiply-add operand type " + id_name(type) + " is no cooperative matrix");
    KILN_CHECK(u->second == kUnassigned || u->second == use, kOp,
               "matrix type " + id_name(type) + " is used both as " + std::to_string(u->second) + " and " +
                   std::to_string(use) + " (0: A, 1: B, 2: accumulator); give the operands distinct shapes");
    u->second = use;
  };
  for (const Inst& i : insts)
    if (opcode(i) == kOpMulAddNV) {
      assign(i[1], true, kUseAccumulator);
      assign(i[3], false, kUseA);
      assign(i[4], false, kUseB);
      assign(i[5], false, kUseAccumulator);
    }

  // The unsigned constants the KHR operands need (Use 0..2; layouts 0, 1), made where missing.
  std::vector<Inst> new_constants;
  // bfloat16: one new scalar type, placed with the new constants (before every matrix type).
  const std::uint32_t bf16_type = options.bf16_matrices ? bound++ : 0;
  if (bf16_type) {
    KILN_CHECK(half_type != 0, kOp, "bf16 matrices asked of a module without 16-bit floats");
    new_constants.push_back(make(kOpTypeFloat, {bf16_type, 16, kEncodingBFloat16}));
  }
  for (std::uint32_t v = 0; v <= 2; ++v)
    if (!constant_id.count(v)) {
      constant_id[v] = bound++;
      new_constants.push_back(make(kOpConstant, {uint_type, constant_id[v], v}));
    }
  // Tensor loads: one 2-d layout type without clamping, an undefined matrix per loaded type (the
  // load's Object: what elements outside the layout would keep; none are), and the constant 1.
  std::uint32_t tensor_layout_type = 0, one = 0;
  std::unordered_map<std::uint32_t, std::uint32_t> undefined_of;  // matrix type -> OpUndef id
  std::vector<Inst> tensor_types;  // placed after the matrix types
  if (tensor_loads) {
    for (const auto& [id, value] : uint_constant)
      if (value == 1 && one == 0) one = id;
    if (one == 0) {
      one = bound++;
      new_constants.push_back(make(kOpConstant, {uint_type, one, 1}));
    }
    tensor_layout_type = bound++;
    tensor_types.push_back(make(kOpTypeTensorLayoutNV, {tensor_layout_type, constant_id[2], constant_id[kClampUndefined]}));
    for (const Inst& i : insts)
      if (opcode(i) == kOpLoadNV && scope_of[i[1]] == kScopeWorkgroup && !undefined_of.count(i[1])) {
        undefined_of[i[1]] = bound++;
        tensor_types.push_back(make(kOpUndef, {i[1], undefined_of[i[1]]}));
      }
  }
  // Rows and columns of each matrix type (ids of constants).
  std::unordered_map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> dims_of;
  for (const Inst& i : insts)
    if (opcode(i) == kOpTypeCoopNV) dims_of[i[1]] = {i[4], i[5]};

  auto layout = [&](std::uint32_t column_major_id) {
    const auto c = bool_constant.find(column_major_id);
    KILN_CHECK(c != bool_constant.end(), kOp, "a matrix load or store whose layout " + id_name(column_major_id) +
                                                  " is no boolean constant");
    return constant_id[c->second ? kColumnMajor : kRowMajor];
  };

  std::vector<Inst> out;
  out.reserve(insts.size() + 4);
  bool constants_placed = false;
  std::size_t last_matrix_type = 0;
  for (std::size_t n = 0; n < insts.size(); ++n)
    if (opcode(insts[n]) == kOpTypeCoopNV) last_matrix_type = n;
  for (std::size_t n = 0; n < insts.size(); ++n) {
    Inst& i = insts[n];
    // The tensor types follow the last matrix type (they name matrix types).
    if (n == last_matrix_type + 1)
      for (Inst& t : tensor_types) out.push_back(std::move(t));
    switch (opcode(i)) {
      case kOpCapability:
        if (i[1] == kCapCoopNV) {
          i[1] = kCapCoopKHR;
          if (tensor_loads) {
            out.push_back(make(kOpCapability, {kCapTensorAddressingNV}));
            out.push_back(make(kOpCapability, {kCapCoopTensorAddressingNV}));
          }
          if (bf16_type) {
            out.push_back(make(kOpCapability, {kCapBFloat16Type}));
            out.push_back(make(kOpCapability, {kCapBFloat16CooperativeMatrix}));
          }
        }
        out.push_back(std::move(i));
        break;
      case kOpExtension:
        if (literal_string(i, 1) == "SPV_NV_cooperative_matrix") {
          out.push_back(extension("SPV_KHR_cooperative_matrix"));
          if (workgroup_scope) out.push_back(extension("SPV_NV_cooperative_matrix2"));
          if (tensor_loads) out.push_back(extension("SPV_NV_tensor_addressing"));
          if (bf16_type) out.push_back(extension("SPV_KHR_bfloat16"));
        } else {
          out.push_back(std::move(i));
        }
        break;
      case kOpTypeCoopNV: {
        if (!constants_placed) {  // before their first use, in the types-and-constants section
          for (Inst& c : new_constants) out.push_back(std::move(c));
          constants_placed = true;
        }
        const std::uint32_t use = use_of[i[1]] == kUnassigned ? kUseAccumulator : use_of[i[1]];
        const std::uint32_t component = bf16_type && i[2] == half_type ? bf16_type : i[2];
        out.push_back(make(kOpTypeCoopKHR, {i[1], component, i[3], i[4], i[5], constant_id[use]}));
        break;
      }
      case kOpLoadNV: {  // rt, id, pointer, stride, column-major, memory access...
        if (tensor_loads && scope_of[i[1]] == kScopeWorkgroup) {
          // A layout of the matrix's own dimensions and the load's row stride, read from the
          // load's pointer: the same elements, given to the driver as one tensor tile.
          KILN_CHECK(layout(i[5]) == constant_id[kRowMajor], kOp,
                     "tensor loads of column-major matrices are not supported");
          const auto [rows, cols] = dims_of[i[1]];
          const std::uint32_t l0 = bound++, l1 = bound++, l2 = bound++;
          out.push_back(make(kOpCreateTensorLayoutNV, {tensor_layout_type, l0}));
          out.push_back(make(kOpTensorLayoutSetDimensionNV, {tensor_layout_type, l1, l0, rows, cols}));
          out.push_back(make(kOpTensorLayoutSetStrideNV, {tensor_layout_type, l2, l1, i[4], one}));
          Inst k = make(kOpLoadTensorNV, {i[1], i[2], i[3], undefined_of[i[1]], l2});
          if (i.size() > 6)
            k.insert(k.end(), i.begin() + 6, i.end());  // the memory operand
          else
            k.push_back(0);  // MemoryAccess None
          k.push_back(0);    // TensorAddressingOperands None
          k[0] = static_cast<std::uint32_t>(k.size()) << 16 | kOpLoadTensorNV;
          out.push_back(std::move(k));
          break;
        }
        Inst k = make(kOpLoadKHR, {i[1], i[2], i[3], layout(i[5]), i[4]});
        k.insert(k.end(), i.begin() + 6, i.end());
        k[0] = static_cast<std::uint32_t>(k.size()) << 16 | kOpLoadKHR;
        out.push_back(std::move(k));
        break;
      }
      case kOpStoreNV: {  // pointer, object, stride, column-major, memory access...
        Inst k = make(kOpStoreKHR, {i[1], i[2], layout(i[4]), i[3]});
        k.insert(k.end(), i.begin() + 5, i.end());
        k[0] = static_cast<std::uint32_t>(k.size()) << 16 | kOpStoreKHR;
        out.push_back(std::move(k));
        break;
      }
      case kOpMulAddNV:
        i[0] = (i[0] & 0xffff0000u) | kOpMulAddKHR;
        out.push_back(std::move(i));
        break;
      case kOpLengthNV:
        i[0] = (i[0] & 0xffff0000u) | kOpLengthKHR;
        out.push_back(std::move(i));
        break;
      default:
        out.push_back(std::move(i));
    }
  }
  KILN_CHECK(constants_placed || new_constants.empty(), kOp, "the module has no cooperative-matrix type");

  std::vector<std::uint32_t> result(module.begin(), module.begin() + 5);
  result[3] = bound;
  for (const Inst& i : out) result.insert(result.end(), i.begin(), i.end());
  return result;
}

}  // namespace kiln::vk
