// Elementwise ops on Vulkan: a FusedExpr becomes one GLSL compute kernel. Each thread (in a
// grid-stride loop) computes the coordinates of its element once, loads every input (at the
// element itself, or through broadcast strides), evaluates the nodes in order as GLSL
// expressions with PyTorch's semantics (the kiln_* math of vk_prelude.cpp), and stores the
// outputs. All loads precede all stores, so an output may share its buffer with an input.
// Kernels are cached by FusedExpr::structure_key(); sizes, strides and scalar values are
// arguments. An unfused elementwise op runs the same code as a one-node expression.
#include <cmath>
#include <cstdint>
#include <string>

#include "devices/anchored_steps.h"
#include "devices/vulkan/vk_device.h"
#include "ops/elementwise_rules.h"
#include "ops/registry.h"

namespace kiln::vk {

namespace {

std::string to_s(std::size_t v) { return std::to_string(v); }

bool broadcasts(const TensorIr& in, const Shape& shape) {
  for (int d = 0; d < shape.rank(); ++d) {
    const int id = in.shape.rank() - shape.rank() + d;
    if (id < 0 || (in.shape[id] == 1 && shape[d] != 1)) return true;
  }
  return in.shape.rank() != shape.rank();
}

// `e`, a value of dtype `from`, as dtype `to`.
std::string convert(const std::string& e, DType from, DType to) {
  if (from == to) return e;
  // f16 and bf16 values are held as f32 (already rounded): convert as f32, round to 16 bits.
  if (from == DType::f16 || from == DType::bf16) return convert(e, DType::f32, to);
  if (to == DType::f16) return "kiln_round_f16(" + convert(e, from, DType::f32) + ")";
  if (to == DType::bf16) return "kiln_round_bf16(" + convert(e, from, DType::f32) + ")";
  if (from == DType::f32 && to == DType::i64) return "kiln_f32_to_i64(" + e + ")";
  if (from == DType::f32 && to == DType::bool_) return "!((" + e + ") == 0.0)";
  if (from == DType::i64 && to == DType::f32) return "float(" + e + ")";
  if (from == DType::i64 && to == DType::bool_) return "((" + e + ") != 0l)";
  if (from == DType::bool_ && to == DType::f32) return "((" + e + ") ? 1.0 : 0.0)";
  if (from == DType::bool_ && to == DType::i64) return "((" + e + ") ? 1l : 0l)";
  throw Error("vulkan", std::string("no conversion from ") + dtype_name(from) + " to " + dtype_name(to));
}

[[noreturn]] void unsupported(const FusedNode& n) {
  throw Error(op_name(n.kind), std::string("no Vulkan kernel for compute dtype ") + dtype_name(n.compute));
}

std::string f32_expr(const FusedNode& n, const std::string& a, const std::string& b, const std::string& lo,
                     const std::string& hi) {
  switch (n.kind) {
    case OpKind::neg: return "-" + a;
    case OpKind::abs: return "abs(" + a + ")";
    case OpKind::exp: return "kiln_exp(" + a + ")";
    case OpKind::log: return "kiln_log(" + a + ")";
    case OpKind::log1p: return "kiln_log1p(" + a + ")";
    case OpKind::expm1: return "kiln_expm1(" + a + ")";
    case OpKind::sqrt: return "kiln_sqrt(" + a + ")";
    case OpKind::rsqrt: return "(1.0 / kiln_sqrt(" + a + "))";
    case OpKind::square: return "(" + a + " * " + a + ")";
    case OpKind::reciprocal: return "(1.0 / " + a + ")";
    case OpKind::sin: return "kiln_sin(" + a + ")";
    case OpKind::cos: return "kiln_cos(" + a + ")";
    case OpKind::tan: return "kiln_tan(" + a + ")";
    case OpKind::tanh: return "kiln_tanh(" + a + ")";
    case OpKind::sigmoid: return "(1.0 / (1.0 + kiln_exp(-" + a + ")))";
    case OpKind::erf: return "kiln_erf(" + a + ")";
    case OpKind::relu: return "(kiln_isnan(" + a + ") || " + a + " >= 0.0 ? " + a + " : 0.0)";  // NaN stays NaN
    case OpKind::gelu: return "(" + a + " * 0.5 * (1.0 + kiln_erf(" + a + " * 0.70710678118654752)))";
    case OpKind::silu: return "(" + a + " / (1.0 + kiln_exp(-" + a + ")))";
    case OpKind::softplus: return "(" + a + " > 20.0 ? " + a + " : kiln_log1p(kiln_exp(" + a + ")))";
    case OpKind::floor: return "floor(" + a + ")";
    case OpKind::ceil: return "ceil(" + a + ")";
    case OpKind::round: return "roundEven(" + a + ")";
    case OpKind::sign: return "(float(" + a + " > 0.0) - float(" + a + " < 0.0))";
    case OpKind::isnan: return "kiln_isnan(" + a + ")";
    case OpKind::isinf: return "kiln_isinf(" + a + ")";
    case OpKind::clamp: return "kiln_minimum(kiln_maximum(" + a + ", " + lo + "), " + hi + ")";
    case OpKind::add: return "(" + a + " + " + b + ")";
    case OpKind::sub: return "(" + a + " - " + b + ")";
    case OpKind::mul: return "(" + a + " * " + b + ")";
    case OpKind::div: return "(" + a + " / " + b + ")";
    case OpKind::pow: return "kiln_pow(" + a + ", " + b + ")";
    case OpKind::remainder: return "kiln_remainder(" + a + ", " + b + ")";
    case OpKind::maximum: return "kiln_maximum(" + a + ", " + b + ")";
    case OpKind::minimum: return "kiln_minimum(" + a + ", " + b + ")";
    case OpKind::atan2: return "kiln_atan2(" + a + ", " + b + ")";
    case OpKind::eq: return "(" + a + " == " + b + ")";
    case OpKind::ne: return "!(" + a + " == " + b + ")";
    case OpKind::lt: return "(" + a + " < " + b + ")";
    case OpKind::le: return "(" + a + " <= " + b + ")";
    case OpKind::gt: return "(" + a + " > " + b + ")";
    case OpKind::ge: return "(" + a + " >= " + b + ")";
    default: unsupported(n);
  }
}

std::string i64_expr(const FusedNode& n, const std::string& a, const std::string& b, const std::string& lo,
                     const std::string& hi) {
  switch (n.kind) {
    case OpKind::neg: return "(-" + a + ")";
    case OpKind::abs: return "(" + a + " < 0l ? -" + a + " : " + a + ")";
    case OpKind::square: return "(" + a + " * " + a + ")";
    case OpKind::relu: return "(" + a + " < 0l ? 0l : " + a + ")";
    case OpKind::sign: return "(int64_t(" + a + " > 0l) - int64_t(" + a + " < 0l))";
    case OpKind::isnan:
    case OpKind::isinf: return "false";
    case OpKind::floor:
    case OpKind::ceil:
    case OpKind::round: return a;
    case OpKind::clamp: return "min(max(" + a + ", " + lo + "), " + hi + ")";
    case OpKind::add: return "(" + a + " + " + b + ")";
    case OpKind::sub: return "(" + a + " - " + b + ")";
    case OpKind::mul: return "(" + a + " * " + b + ")";
    case OpKind::pow: return "kiln_pow_i64(" + a + ", " + b + ")";
    case OpKind::remainder:
      return "kiln_remainder_i64(" + a + ", " + b + ", " + to_s(static_cast<std::size_t>(n.kind) + 1) + "u)";
    case OpKind::maximum: return "max(" + a + ", " + b + ")";
    case OpKind::minimum: return "min(" + a + ", " + b + ")";
    case OpKind::eq: return "(" + a + " == " + b + ")";
    case OpKind::ne: return "(" + a + " != " + b + ")";
    case OpKind::lt: return "(" + a + " < " + b + ")";
    case OpKind::le: return "(" + a + " <= " + b + ")";
    case OpKind::gt: return "(" + a + " > " + b + ")";
    case OpKind::ge: return "(" + a + " >= " + b + ")";
    default: unsupported(n);
  }
}

std::string bool_expr(const FusedNode& n, const std::string& a, const std::string& b) {
  switch (n.kind) {
    case OpKind::logical_not: return "!" + a;
    case OpKind::isnan:
    case OpKind::isinf: return "false";
    case OpKind::sign: return a;
    case OpKind::add:
    case OpKind::maximum:
    case OpKind::logical_or: return "(" + a + " || " + b + ")";
    case OpKind::mul:
    case OpKind::minimum:
    case OpKind::logical_and: return "(" + a + " && " + b + ")";
    case OpKind::logical_xor:
    case OpKind::ne: return "(" + a + " != " + b + ")";
    case OpKind::eq: return "(" + a + " == " + b + ")";
    case OpKind::lt: return "(!" + a + " && " + b + ")";
    case OpKind::le: return "(!" + a + " || " + b + ")";
    case OpKind::gt: return "(" + a + " && !" + b + ")";
    case OpKind::ge: return "(" + a + " || !" + b + ")";
    default: unsupported(n);
  }
}

// The argument block of a fused kernel (see fused_args): outputs, inputs, n, then the output
// dims and each broadcasting input's strides when any input broadcasts, then the scalars.
struct ArgLayout {
  std::size_t n_word = 0, dims_word = 0;
  std::vector<std::size_t> stride_word;  // per input; 0 when it does not broadcast
  std::size_t scalars_word = 0;
  bool coords = false;
};

ArgLayout layout_of(const FusedExpr& e) {
  ArgLayout l;
  std::size_t w = e.outputs.size() + e.inputs.size();
  l.n_word = w++;
  l.dims_word = w;
  l.stride_word.assign(e.inputs.size(), 0);
  for (std::size_t k = 0; k < e.inputs.size(); ++k) l.coords |= broadcasts(e.inputs[k], e.shape);
  if (l.coords) {
    w += e.shape.rank();
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      if (broadcasts(e.inputs[k], e.shape)) {
        l.stride_word[k] = w;
        w += e.shape.rank();
      }
  }
  l.scalars_word = w;
  return l;
}

std::string arg_read(DType t, std::size_t word) {
  switch (t) {
    case DType::f32: return "arg_f32(" + to_s(word) + ")";
    case DType::i64: return "arg_i64(" + to_s(word) + ")";
    case DType::bool_: return "(arg_u32(" + to_s(word) + ") != 0u)";
    default: throw Error("vulkan", std::string("no scalar of dtype ") + dtype_name(t));
  }
}

// A kernel whose inputs and outputs are all f32 at the same index (nothing broadcasts) moves
// four elements per thread through 16-byte vec4 loads and stores when every buffer is 16-byte
// aligned: on NVIDIA that is what reaches memory bandwidth (scalar loads, one per thread, stall
// at about 40% of it).
bool vectorizable(const FusedExpr& e) {
  for (const TensorIr& t : e.inputs)
    if (t.dtype != DType::f32 || broadcasts(t, e.shape)) return false;
  for (const TensorIr& t : e.outputs)
    if (t.dtype != DType::f32) return false;
  return true;
}

// "x3_1": built by appending (GCC 12 warns falsely on `"x" + std::string + std::string`).
std::string var(const char* prefix, std::size_t i, const std::string& sfx) {
  std::string s(prefix);
  s += to_s(i);
  s += sfx;
  return s;
}

// The node computations of one element: inputs are x<k><sfx>, nodes v<i><sfx>.
std::string node_code(const FusedExpr& e, const std::vector<std::string>& scalar_name, const std::vector<std::string>& lo,
                      const std::vector<std::string>& hi, const std::string& sfx, const std::string& indent) {
  std::string s;
  for (std::size_t i = 0; i < e.nodes.size(); ++i) {
    const FusedNode& n = e.nodes[i];
    std::string ops[3];
    for (int j = 0; j < n.arity; ++j) {
      const FusedOperand& o = n.operands[j];
      const DType want = elementwise_operand_dtype(n.kind, static_cast<std::size_t>(j), n.compute);
      switch (o.kind) {
        case FusedOperand::Kind::input: ops[j] = convert(var("x", o.index, sfx), e.inputs[o.index].dtype, want); break;
        case FusedOperand::Kind::node: ops[j] = convert(var("v", o.index, sfx), e.nodes[o.index].out, want); break;
        case FusedOperand::Kind::scalar: ops[j] = scalar_name[i * 3 + j]; break;
      }
    }
    std::string value;
    if (n.kind == OpKind::cast) value = ops[0];
    else if (n.kind == OpKind::where) value = "(" + ops[0] + " ? " + ops[1] + " : " + ops[2] + ")";
    else if (n.compute == DType::f32) value = f32_expr(n, ops[0], ops[1], lo[i], hi[i]);
    else if (n.compute == DType::i64) value = i64_expr(n, ops[0], ops[1], lo[i], hi[i]);
    else if (n.compute == DType::bool_) value = bool_expr(n, ops[0], ops[1]);
    else unsupported(n);
    s += indent + glsl_value_type(n.out) + " " + var("v", i, sfx) + " = " + value + ";\n";
  }
  return s;
}

std::string fused_source(const VulkanDevice& dev, const FusedExpr& e, bool vec4) {
  const ArgLayout l = layout_of(e);
  const int rank = e.shape.rank();
  std::string s = dev.prelude();
  if (vec4)
    s += "layout(buffer_reference, std430, buffer_reference_align = 16) buffer F32x4s { vec4 v[]; };\n";
  s += "layout(local_size_x = 256) in;\nvoid main() {\n";
  for (std::size_t o = 0; o < e.outputs.size(); ++o)
    s += std::string("  ") + glsl_pointer_type(e.outputs[o].dtype) + " out" + to_s(o) + " = " +
         glsl_pointer_type(e.outputs[o].dtype) + "(arg_u64(" + to_s(o) + "));\n";
  for (std::size_t k = 0; k < e.inputs.size(); ++k)
    s += std::string("  ") + glsl_pointer_type(e.inputs[k].dtype) + " in" + to_s(k) + " = " +
         glsl_pointer_type(e.inputs[k].dtype) + "(arg_u64(" + to_s(e.outputs.size() + k) + "));\n";
  s += "  uint n = arg_u32(" + to_s(l.n_word) + ");\n";
  if (l.coords) {
    for (int d = 0; d < rank; ++d) s += "  uint d" + to_s(d) + " = arg_u32(" + to_s(l.dims_word + d) + ");\n";
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      for (int d = 0; l.stride_word[k] && d < rank; ++d)
        s += "  uint s" + to_s(k) + "_" + to_s(d) + " = arg_u32(" + to_s(l.stride_word[k] + d) + ");\n";
  }
  // Scalars, in the dtype their operand is computed in.
  std::size_t w = l.scalars_word;
  std::vector<std::string> scalar_name(e.nodes.size() * 3), lo(e.nodes.size()), hi(e.nodes.size());
  for (std::size_t i = 0; i < e.nodes.size(); ++i) {
    const FusedNode& n = e.nodes[i];
    for (int j = 0; j < n.arity; ++j) {
      if (n.operands[j].kind != FusedOperand::Kind::scalar) continue;
      const DType t = elementwise_operand_dtype(n.kind, static_cast<std::size_t>(j), n.compute);
      scalar_name[i * 3 + j] = "c" + to_s(i) + "_" + to_s(j);
      s += std::string("  ") + glsl_value_type(t) + " " + scalar_name[i * 3 + j] + " = " + arg_read(t, w++) + ";\n";
    }
    if (n.kind == OpKind::clamp) {
      lo[i] = "lo" + to_s(i);
      hi[i] = "hi" + to_s(i);
      s += std::string("  ") + glsl_value_type(n.compute) + " " + lo[i] + " = " + arg_read(n.compute, w++) + ";\n";
      s += std::string("  ") + glsl_value_type(n.compute) + " " + hi[i] + " = " + arg_read(n.compute, w++) + ";\n";
    }
  }
  // One element at index i: loads, nodes, stores.
  auto element = [&](const std::string& indent) {
    std::string b;
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      std::string index = "i";
      if (l.stride_word[k]) {
        index = "(0u";
        for (int d = 0; d < rank; ++d) index += " + k" + to_s(d) + " * s" + to_s(k) + "_" + to_s(d);
        index += ")";
      }
      b += indent + glsl_value_type(e.inputs[k].dtype) + " x" + to_s(k) + " = " +
           glsl_load(e.inputs[k].dtype, "in" + to_s(k), index) + ";\n";
    }
    b += node_code(e, scalar_name, lo, hi, "", indent);
    for (std::size_t o = 0; o < e.outputs.size(); ++o)
      b += indent + glsl_store(e.outputs[o].dtype, var("out", o, ""), "i", var("v", e.output_nodes[o], "")) + "\n";
    return b;
  };
  if (vec4) {
    // Thread q owns elements 4q .. 4q+3; the last one, if short, goes element by element.
    s += "  uint n4 = n / 4u;\n  KILN_FOR_EACH(q, (n + 3u) / 4u) {\n    if (q < n4) {\n";
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      s += "      vec4 X" + to_s(k) + " = F32x4s(arg_u64(" + to_s(e.outputs.size() + k) + ")).v[q];\n";
      for (int c = 0; c < 4; ++c)
        s += "      float x" + to_s(k) + "_" + to_s(c) + " = X" + to_s(k) + "[" + to_s(c) + "];\n";
    }
    for (int c = 0; c < 4; ++c) s += node_code(e, scalar_name, lo, hi, "_" + to_s(c), "      ");
    for (std::size_t o = 0; o < e.outputs.size(); ++o) {
      const std::string v = "v" + to_s(e.output_nodes[o]);
      s += "      F32x4s(arg_u64(" + to_s(o) + ")).v[q] = vec4(" + v + "_0, " + v + "_1, " + v + "_2, " + v + "_3);\n";
    }
    s += "    } else {\n      for (uint i = q * 4u; i < n; ++i) {\n" + element("        ") + "      }\n    }\n  }\n}\n";
    return s;
  }
  s += "  KILN_FOR_EACH(i, n) {\n";
  if (l.coords) {
    s += "    uint r = i;\n";
    for (int d = rank - 1; d > 0; --d) s += "    uint k" + to_s(d) + " = r % d" + to_s(d) + "; r /= d" + to_s(d) + ";\n";
    if (rank > 0) s += "    uint k0 = r;\n";
  }
  s += element("    ");
  s += "  }\n}\n";
  return s;
}

LaunchArgs fused_args(const FusedExpr& e, const KernelArgs& args) {
  const ArgLayout l = layout_of(e);
  const int rank = e.shape.rank();
  LaunchArgs a;
  for (Buffer* b : args.outputs) a.buffer(*b);
  for (Buffer* b : args.inputs) a.buffer(*b);
  a.u64(static_cast<std::uint64_t>(e.shape.numel()));
  if (l.coords) {
    for (int d = 0; d < rank; ++d) a.u64(static_cast<std::uint64_t>(e.shape[d]));
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      if (!l.stride_word[k]) continue;
      const Shape& in = e.inputs[k].shape;
      std::vector<std::uint64_t> strides(rank, 0);
      std::uint64_t step = 1;
      for (int d = rank - 1; d >= 0; --d) {
        const int id = in.rank() - rank + d;
        if (id < 0) break;
        if (!(in[id] == 1 && e.shape[d] != 1)) strides[d] = step;
        step *= static_cast<std::uint64_t>(in[id]);
      }
      for (std::uint64_t s : strides) a.u64(s);
    }
  }
  for (const FusedNode& n : e.nodes) {
    for (int j = 0; j < n.arity; ++j)
      if (n.operands[j].kind == FusedOperand::Kind::scalar)
        a.scalar(fused_scalar_value(n, j), elementwise_operand_dtype(n.kind, static_cast<std::size_t>(j), n.compute));
    if (n.kind == OpKind::clamp) {
      // An absent bound is an infinite one (the dtype's extreme for i64).
      const bool has_lo = !n.attrs.ints.empty() && n.attrs.ints[0];
      const bool has_hi = n.attrs.ints.size() > 1 && n.attrs.ints[1];
      if (n.compute == DType::i64) {
        a.i64(has_lo ? static_cast<std::int64_t>(n.attrs.scalar) : INT64_MIN);
        a.i64(has_hi ? static_cast<std::int64_t>(n.attrs.scalar2) : INT64_MAX);
      } else {
        a.f32(has_lo ? static_cast<float>(n.attrs.scalar) : -INFINITY);
        a.f32(has_hi ? static_cast<float>(n.attrs.scalar2) : INFINITY);
      }
    }
  }
  return a;
}

class FusedKernel final : public CompiledKernel {
 public:
  FusedKernel(const Pipeline& p, const Pipeline* p4) : pipeline(p), vec4(p4) {}
  const Pipeline& pipeline;
  const Pipeline* vec4;  // null when the expression cannot use vec4 loads
};

bool aligned16(const KernelArgs& args) {
  for (const Buffer* b : args.inputs)
    if (VulkanDevice::address(*b) % 16) return false;
  for (const Buffer* b : args.outputs)
    if (VulkanDevice::address(*b) % 16) return false;
  return true;
}

void elementwise_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) { dev.run_elementwise(op, args); }

}  // namespace

std::shared_ptr<CompiledKernel> VulkanDevice::compile_fused(const FusedExpr& expr) {
  commands_->check_alive();
  if (expr.anchored()) return std::make_shared<AnchoredSteps>(*this, expr);
  const std::string key = "fused/" + expr.structure_key();
  const char* name = expr.nodes.size() == 1 ? op_name(expr.nodes[0].kind) : "fused elementwise";
  const Pipeline& scalar = pipeline(key, name, [&] { return fused_source(*this, expr, false); });
  const Pipeline* vec4 = nullptr;
  if (vectorizable(expr)) vec4 = &pipeline(key + "/vec4", name, [&] { return fused_source(*this, expr, true); });
  return std::make_shared<FusedKernel>(scalar, vec4);
}

void VulkanDevice::run_fused(const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args) {
  commands_->check_alive();
  if (expr.anchored()) return static_cast<const AnchoredSteps&>(kernel).run(*this, expr, args);
  const std::int64_t n = expr.shape.numel();
  if (n == 0) return;
  KILN_CHECK(n <= static_cast<std::int64_t>(UINT32_MAX), "fused elementwise",
             "tensors over 2^32 elements are not supported on Vulkan yet (" + expr.shape.str() + ")");
  const auto& k = static_cast<const FusedKernel&>(kernel);
  const auto un = static_cast<std::uint64_t>(n);
  if (k.vec4 && aligned16(args)) return dispatch(*k.vec4, fused_args(expr, args), groups_for((un + 3) / 4));
  dispatch(k.pipeline, fused_args(expr, args), groups_for(un));
}

void VulkanDevice::run_elementwise(const OpIr& op, const KernelArgs& args) {
  const FusedExpr expr = single_op_expr(op);
  std::string key = expr.structure_key();
  auto it = single_ops_.find(key);
  if (it == single_ops_.end()) it = single_ops_.emplace(std::move(key), compile_fused(expr)).first;
  // The expression reads each distinct input entity once.
  std::vector<Buffer*> inputs;
  for (const TensorIr& in : expr.inputs)
    for (std::size_t i = 0; i < op.inputs.size(); ++i)
      if (op.inputs[i].id == in.id) {
        inputs.push_back(args.inputs[i]);
        break;
      }
  run_fused(*it->second, expr, KernelArgs{std::span<Buffer* const>(inputs), args.outputs});
}

void register_elementwise_kernels(KernelTable& t) {
  for (std::size_t k = 0; k < kOpCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    if (is_elementwise(kind)) t.set(kind, elementwise_kernel);
  }
}

}  // namespace kiln::vk
