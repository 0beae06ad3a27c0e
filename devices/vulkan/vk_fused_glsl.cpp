// GLSL of FusedExpr nodes (see vk_fused_glsl.h): each node becomes one GLSL expression with
// PyTorch's semantics (the kiln_* math of vk_prelude.cpp), its operands converted to the dtype
// the op computes in.
#include "kiln/devices/vulkan/vk_fused_glsl.h"

#include <cmath>
#include <cstdint>

#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/ops/attrs_elementwise.h"
#include "kiln/ops/elementwise_rules.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::fused {

namespace {

// `e`, a value of dtype `from`, as dtype `to`.
std::string convert(const std::string& e, DType from, DType to) {
  if (from == to) return e;
  // f16 and bf16 values are held as f32 (already rounded): convert as f32, round to 16 bits.
  if (is_half(from)) return convert(e, DType::f32, to);
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
      return "kiln_remainder_i64(" + a + ", " + b + ", " + std::to_string(static_cast<std::size_t>(n.kind) + 1) + "u)";
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

std::string arg_read(DType t, const std::string& word) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "arg_f32(" + word + ")";  // f32 (LaunchArgs::scalar)
    case DType::i64: return "arg_i64(" + word + ")";
    case DType::bool_: return "(arg_u32(" + word + ") != 0u)";
    default: throw Error("vulkan", std::string("no scalar of dtype ") + dtype_name(t));
  }
}

// "x3_1": built by appending (GCC 12 warns falsely on `"x" + std::string + std::string`).
std::string var(const char* prefix, std::size_t i, const std::string& sfx) {
  std::string s(prefix);
  s += std::to_string(i);
  s += sfx;
  return s;
}

std::string word_at(const std::string& base, std::size_t w) {
  if (base.empty()) return std::to_string(w);
  std::string s = "(";
  s += base;
  s += " + ";
  s += std::to_string(w);
  s += "u)";
  return s;
}

}  // namespace

bool broadcasts(const TensorIr& in, const Shape& shape) {
  for (int d = 0; d < shape.rank(); ++d) {
    const int id = in.shape.rank() - shape.rank() + d;
    if (id < 0 || (in.shape[id] == 1 && shape[d] != 1)) return true;
  }
  return in.shape.rank() != shape.rank();
}

std::string Params::name(const char* what, std::size_t i) const {
  std::string s = prefix;
  s += what;
  s += std::to_string(i);
  return s;
}

Params params_of(const FusedExpr& e, const std::string& prefix, const std::string& base) {
  Params p;
  p.prefix = prefix;
  const int rank = e.shape.rank();
  std::size_t w = 0;
  auto add = [&](std::string type, std::string name, std::string init) {
    p.vars.push_back({std::move(type), std::move(name), std::move(init)});
  };
  auto pointer = [&](DType t, std::string name) {
    std::string init = glsl_pointer_type(t);
    init += "(arg_u64(" + word_at(base, w++) + "))";
    add(glsl_pointer_type(t), std::move(name), std::move(init));
  };
  for (std::size_t o = 0; o < e.outputs.size(); ++o) {
    p.out_word.push_back(word_at(base, w));
    pointer(e.outputs[o].dtype, p.name("out", o));
  }
  for (std::size_t k = 0; k < e.inputs.size(); ++k) {
    p.in_word.push_back(word_at(base, w));
    pointer(e.inputs[k].dtype, p.name("in", k));
  }
  add("uint", prefix + "n", "arg_u32(" + word_at(base, w++) + ")");
  for (const TensorIr& in : e.inputs) {
    p.strided.push_back(broadcasts(in, e.shape));
    p.coords = p.coords || p.strided.back();
  }
  if (p.coords) {
    for (int d = 0; d < rank; ++d) add("uint", p.name("d", static_cast<std::size_t>(d)), "arg_u32(" + word_at(base, w++) + ")");
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      for (int d = 0; p.strided[k] && d < rank; ++d)
        add("uint", p.name("s", k) + "_" + std::to_string(static_cast<std::size_t>(d)),
            "arg_u32(" + word_at(base, w++) + ")");
  }
  // Scalars, in the dtype their operand is computed in.
  p.scalar.assign(e.nodes.size() * 3, {});
  p.lo.assign(e.nodes.size(), {});
  p.hi.assign(e.nodes.size(), {});
  for (std::size_t i = 0; i < e.nodes.size(); ++i) {
    const FusedNode& n = e.nodes[i];
    for (int j = 0; j < n.arity; ++j) {
      if (n.operands[j].kind != FusedOperand::Kind::scalar) continue;
      const DType t = elementwise_operand_dtype(n.kind, static_cast<std::size_t>(j), n.compute);
      p.scalar[i * 3 + static_cast<std::size_t>(j)] =
          p.name("c", i) + "_" + std::to_string(static_cast<std::size_t>(j));
      add(glsl_value_type(t), p.scalar[i * 3 + static_cast<std::size_t>(j)], arg_read(t, word_at(base, w++)));
    }
    if (n.kind == OpKind::clamp) {
      p.lo[i] = p.name("lo", i);
      p.hi[i] = p.name("hi", i);
      add(glsl_value_type(n.compute), p.lo[i], arg_read(n.compute, word_at(base, w++)));
      add(glsl_value_type(n.compute), p.hi[i], arg_read(n.compute, word_at(base, w++)));
    }
  }
  return p;
}

std::string coords_code(const FusedExpr& e, const Params& p, const std::string& indent) {
  if (!p.coords) return {};
  const int rank = e.shape.rank();
  std::string s = indent + "uint r = i;\n";
  for (int d = rank - 1; d > 0; --d) {
    const std::string dim = p.name("d", static_cast<std::size_t>(d));
    s += indent + "uint k" + std::to_string(static_cast<std::size_t>(d)) + " = r % " + dim + "; r /= " + dim + ";\n";
  }
  if (rank > 0) s += indent + "uint k0 = r;\n";
  return s;
}

namespace {

// The index of element i in input k: i itself, or from the coordinates where it broadcasts.
std::string input_index(const FusedExpr& e, const Params& p, std::size_t k) {
  if (!p.strided[k]) return "i";
  std::string index = "(0u";
  for (int d = 0; d < e.shape.rank(); ++d) {
    const std::string ds = std::to_string(static_cast<std::size_t>(d));
    index += " + k" + ds + " * " + p.name("s", k) + "_" + ds;
  }
  return index + ")";
}

}  // namespace

std::string load_code(const FusedExpr& e, const Params& p, std::size_t first, const std::string& indent) {
  std::string s;
  for (std::size_t k = first; k < e.inputs.size(); ++k) {
    const std::string index = input_index(e, p, k);
    s += indent + glsl_value_type(e.inputs[k].dtype) + " " + var("x", k, "") + " = " +
         glsl_load(e.inputs[k].dtype, p.name("in", k), index) + ";\n";
  }
  return s;
}

std::string node_code(const FusedExpr& e, const Params& p, const std::string& sfx, const std::string& indent) {
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
        case FusedOperand::Kind::scalar: ops[j] = p.scalar[i * 3 + static_cast<std::size_t>(j)]; break;
      }
    }
    std::string value;
    if (n.kind == OpKind::cast) value = ops[0];
    else if (n.kind == OpKind::where) value = "(" + ops[0] + " ? " + ops[1] + " : " + ops[2] + ")";
    else if (n.compute == DType::f32) value = f32_expr(n, ops[0], ops[1], p.lo[i], p.hi[i]);
    // f16 and bf16: the math of f32 on the operands (held as f32), rounded once to the node's
    // dtype, as PyTorch's CUDA kernels compute them; so a fused chain rounds where the ops
    // would, and fused and unfused values agree bit for bit.
    else if (is_half(n.compute)) {
      value = f32_expr(n, ops[0], ops[1], p.lo[i], p.hi[i]);
      if (n.out == n.compute) value = convert(value, DType::f32, n.out);  // not for comparisons
    }
    else if (n.compute == DType::i64) value = i64_expr(n, ops[0], ops[1], p.lo[i], p.hi[i]);
    else if (n.compute == DType::bool_) value = bool_expr(n, ops[0], ops[1]);
    else unsupported(n);
    // `precise` (SPIR-V NoContraction): the driver may not fuse a node's multiply with the
    // add of the node or reduction that consumes it. Without it NVIDIA's compiler forms FMAs
    // across nodes, so the bits of a value depended on which ops the planner happened to put
    // in one kernel (and so on timing: two runs of one training job with the same seed
    // drifted apart); with it every node rounds as its own op would.
    const char* qualifier = is_floating(n.out) ? "precise " : "";
    s += indent + qualifier + glsl_value_type(n.out) + " " + var("v", i, sfx) + " = " + value + ";\n";
  }
  return s;
}

std::string store_code(const FusedExpr& e, const Params& p, const std::string& indent) {
  std::string s;
  for (std::size_t o = 0; o < e.outputs.size(); ++o)
    s += indent + glsl_store(e.outputs[o].dtype, p.name("out", o), "i", var("v", e.output_nodes[o], "")) + "\n";
  return s;
}

std::string functions(const FusedExpr& e, const std::string& prefix, const std::string& base, bool epilogue) {
  const Params p = params_of(e, prefix, base);
  std::string s;
  for (const Params::Var& v : p.vars) s += v.type + " " + v.name + ";\n";
  s += "void " + prefix + "init() {\n";
  for (const Params::Var& v : p.vars) s += "  " + v.name + " = " + v.init + ";\n";
  s += "}\n";
  if (epilogue) {
    // Every load precedes every store: an output may share its buffer with an input.
    s += "void " + prefix + "apply(uint i, float x0) {\n";
    // x0 holds a value of input 0's dtype: a 16-bit one as it would be stored (the anchor
    // computes it in f32), so that an op after a reduction reads what it reads unfused.
    if (is_half(e.inputs[0].dtype)) s += "  x0 = " + convert("x0", DType::f32, e.inputs[0].dtype) + ";\n";
    s += coords_code(e, p, "  ") + load_code(e, p, 1, "  ") + node_code(e, p, "", "  ") + store_code(e, p, "  ");
  } else {
    const std::uint32_t out = e.output_nodes.at(0);
    s += "float " + prefix + "value(uint i) {\n";
    s += coords_code(e, p, "  ") + load_code(e, p, 0, "  ") + node_code(e, p, "", "  ");
    s += "  return " + convert(var("v", out, ""), e.nodes[out].out, DType::f32) + ";\n";
  }
  s += "}\n";
  return s;
}

namespace {

// Whether input `in` is broadcast across the last dim of `shape` (its last dim is 1 or missing).
bool broadcast_across_last(const TensorIr& in, const Shape& shape) {
  return in.shape.rank() == 0 || (in.shape[in.shape.rank() - 1] == 1 && shape[shape.rank() - 1] != 1);
}

}  // namespace

bool vector_value_ok(const FusedExpr& e) {
  const int rank = e.shape.rank();
  if (rank == 0 || e.shape[rank - 1] % 4 != 0 || e.output_nodes.size() != 1) return false;
  for (const TensorIr& in : e.inputs)
    if (!vector4_bytes(in.dtype)) return false;
  return true;
}

std::string value4_function(const FusedExpr& e, const std::string& prefix, const std::string& base) {
  const Params p = params_of(e, prefix, base);
  // The four elements share every coordinate but the last, whose four values are consecutive:
  // an input along it is four consecutive elements from the first one's index (a multiple of
  // 4: the last dim is, and every other stride is a multiple of it), one broadcast across it is
  // one element for all four.
  std::string s = "vec4 " + prefix + "value4(uint i) {\n" + coords_code(e, p, "  ");
  for (std::size_t k = 0; k < e.inputs.size(); ++k) {
    const std::string index = input_index(e, p, k);
    const std::string x = var("X", k, "");
    if (p.strided[k] && broadcast_across_last(e.inputs[k], e.shape))
      s += "  vec4 " + x + " = vec4(" + glsl_load(e.inputs[k].dtype, p.name("in", k), index) + ");\n";
    else
      s += "  vec4 " + x + " = " + glsl_load4(e.inputs[k].dtype, "arg_u64(" + p.in_word[k] + ")", index + " >> 2") + ";\n";
  }
  const std::uint32_t out = e.output_nodes.at(0);
  std::string result = "  return vec4(";
  for (std::size_t c = 0; c < 4; ++c) {
    std::string sfx = "_";  // built by appending (GCC 12 warns falsely on "_" + std::string)
    sfx += std::to_string(c);
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      s += "  float " + var("x", k, sfx) + " = " + var("X", k, "") + "[" + std::to_string(c) + "];\n";
    s += node_code(e, p, sfx, "  ");
    result += convert(var("v", out, sfx), e.nodes[out].out, DType::f32) + (c < 3 ? ", " : ");\n}\n");
  }
  return s + result;
}

void push_args(LaunchArgs& a, const FusedExpr& e, std::span<Buffer* const> outputs, std::span<Buffer* const> inputs) {
  const int rank = e.shape.rank();
  // Address 0 for what the kernel does not touch, and for empty buffers (no memory behind them).
  auto address = [&](const Buffer* b) { a.address(b && b->bytes() ? VulkanDevice::address(*b) : 0); };
  for (const Buffer* b : outputs) address(b);
  for (const Buffer* b : inputs) address(b);
  a.u64(static_cast<std::uint64_t>(e.shape.numel()));
  bool coords = false;
  for (const TensorIr& in : e.inputs) coords = coords || broadcasts(in, e.shape);
  if (coords) {
    for (int d = 0; d < rank; ++d) a.u64(static_cast<std::uint64_t>(e.shape[d]));
    for (const TensorIr& t : e.inputs) {
      if (!broadcasts(t, e.shape)) continue;
      const Shape& in = t.shape;
      std::vector<std::uint64_t> strides(static_cast<std::size_t>(rank), 0);
      std::uint64_t step = 1;
      for (int d = rank - 1; d >= 0; --d) {
        const int id = in.rank() - rank + d;
        if (id < 0) break;
        if (!(in[id] == 1 && e.shape[d] != 1)) strides[static_cast<std::size_t>(d)] = step;
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
      const ClampAttrs c = ClampAttrs::decode(n.kind, n.attrs);
      if (n.compute == DType::i64) {
        a.i64(c.has_min ? static_cast<std::int64_t>(c.min) : INT64_MIN);
        a.i64(c.has_max ? static_cast<std::int64_t>(c.max) : INT64_MAX);
      } else {
        a.f32(c.has_min ? static_cast<float>(c.min) : -INFINITY);
        a.f32(c.has_max ? static_cast<float>(c.max) : INFINITY);
      }
    }
  }
}

}  // namespace kiln::vk::fused
