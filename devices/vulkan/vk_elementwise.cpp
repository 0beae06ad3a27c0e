// Elementwise ops on Vulkan: a FusedExpr becomes one GLSL compute kernel. Each thread (in a
// grid-stride loop) computes the coordinates of its element once, loads every input (at the
// element itself, or through broadcast strides), evaluates the nodes in order as GLSL
// expressions with PyTorch's semantics (the kiln_* math of vk_prelude.cpp), and stores the
// outputs. All loads precede all stores, so an output may share its buffer with an input.
// Kernels are cached by FusedExpr::structure_key(); sizes, strides and scalar values are
// arguments. An unfused elementwise op runs the same code as a one-node expression. The node
// code is vk_fused_glsl.cpp's (shared with the anchored kernels of vk_anchor.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_anchor.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_fused_glsl.h"
#include "kiln/devices/vulkan/vk_parallel_compile.h"
#include "kiln/ops/elementwise_rules.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace {

// "v3": built by appending (GCC 12 warns falsely on `"v" + std::string`).
std::string named(const char* prefix, std::size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// A kernel whose inputs and outputs are all floats (f32, f16, bf16) at the same index (nothing
// broadcasts) moves four elements per thread through vector loads and stores (16 bytes of f32,
// 8 of a 16-bit type) when every buffer is aligned to them: on NVIDIA that is what reaches
// memory bandwidth (scalar loads, one per thread, stall at about 40% of it).
bool vectorizable(const FusedExpr& e) {
  for (const TensorIr& t : e.inputs)
    if (!is_floating(t.dtype) || fused::broadcasts(t, e.shape)) return false;
  for (const TensorIr& t : e.outputs)
    if (!is_floating(t.dtype)) return false;
  return true;
}

bool has_half(const FusedExpr& e) {
  for (const TensorIr& t : e.inputs)
    if (is_half(t.dtype)) return true;
  for (const TensorIr& t : e.outputs)
    if (is_half(t.dtype)) return true;
  return false;
}

// vec4s per thread in the vectorized kernel, loaded before any math: 2 measured 37.0-37.3 us
// of GPU time for a 16M-element GELU on an H200 against 39.5-39.8 with 1 (4: 39.3-39.8; 512
// or 1024 threads per workgroup, or fewer workgroups looping: no better).
constexpr std::size_t kVecUnroll = 2;

std::string fused_source(const VulkanDevice& dev, const FusedExpr& e, bool vec4) {
  const fused::Params p = fused::params_of(e, "", "");
  std::string s = dev.prelude();
  if (vec4) s += glsl_vector_types(has_half(e));
  s += "layout(local_size_x = 256) in;\nvoid main() {\n";
  for (const fused::Params::Var& v : p.vars) s += "  " + v.type + " " + v.name + " = " + v.init + ";\n";
  // One element at index i: loads, nodes, stores.
  auto element = [&](const std::string& indent) {
    return fused::load_code(e, p, 0, indent) + fused::node_code(e, p, "", indent) + fused::store_code(e, p, indent);
  };
  if (vec4) {
    // Each thread owns U vec4s a grid apart (U = kVecUnroll): all U loads are issued before the
    // math, so that more bytes are in flight per thread. Where one of them is not a whole vec4
    // in range, they go element by element. (Counts avoid n + 3, which wraps near 2^32.)
    const std::string U = std::to_string(kVecUnroll);
    s += "  const uint n4 = n / 4u, nq = n4 + uint(n % 4u != 0u), T = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n";
    s += "  for (uint q0 = gl_GlobalInvocationID.x; q0 < nq; q0 += T * " + U + "u) {\n";
    s += "    if (q0 + " + std::to_string(kVecUnroll - 1) + "u * T < n4) {\n";
    std::vector<std::string> at(kVecUnroll);  // the index of each vec4
    for (std::size_t u = 0; u < kVecUnroll; ++u) {
      at[u] = named("(q0 + ", u) + "u * T)";
      for (std::size_t k = 0; k < e.inputs.size(); ++k)
        s += "      vec4 X" + std::to_string(k) + "u" + std::to_string(u) + " = " +
             glsl_load4(e.inputs[k].dtype, "arg_u64(" + p.in_word[k] + ")", at[u]) + ";\n";
    }
    for (std::size_t u = 0; u < kVecUnroll; ++u) {
      for (std::size_t k = 0; k < e.inputs.size(); ++k)
        for (int c = 0; c < 4; ++c)
          s += "      float x" + std::to_string(k) + "_" + std::to_string(u) + "_" + std::to_string(c) + " = X" +
               std::to_string(k) + "u" + std::to_string(u) + "[" + std::to_string(c) + "];\n";
      for (int c = 0; c < 4; ++c)
        s += fused::node_code(e, p, named("_", u) + "_" + std::to_string(static_cast<std::size_t>(c)), "      ");
      for (std::size_t o = 0; o < e.outputs.size(); ++o) {
        const std::string v = named("v", e.output_nodes[o]) + "_" + std::to_string(u);
        s += "      " +
             glsl_store4(e.outputs[o].dtype, "arg_u64(" + p.out_word[o] + ")", at[u],
                         "vec4(" + v + "_0, " + v + "_1, " + v + "_2, " + v + "_3)") +
             "\n";
      }
    }
    s += "    } else {\n      for (uint u = 0u; u < " + U + "u; ++u) {\n        const uint q = q0 + u * T;\n";
    s += "        if (q >= nq) break;\n        for (uint c = 0u; c < min(4u, n - q * 4u); ++c) {\n";
    s += "          const uint i = q * 4u + c;\n" + element("          ") + "        }\n      }\n    }\n  }\n}\n";
    return s;
  }
  s += "  KILN_FOR_EACH(i, n) {\n";
  s += fused::coords_code(e, p, "    ");
  s += element("    ");
  s += "  }\n}\n";
  return s;
}

LaunchArgs fused_args(const FusedExpr& e, const KernelArgs& args) {
  LaunchArgs a;
  fused::push_args(a, e, args.outputs, args.inputs);
  return a;
}

class FusedKernel final : public CompiledKernel {
 public:
  FusedKernel(const Pipeline& p, const Pipeline* p4) : pipeline(p), vec4(p4) {}
  const Pipeline& pipeline;
  const Pipeline* vec4;  // null when the expression cannot use vec4 loads
};

// Every buffer aligned to its vector of four (16 bytes of f32, 8 of a 16-bit type).
bool vector_aligned(const FusedExpr& e, const KernelArgs& args) {
  for (std::size_t k = 0; k < args.inputs.size(); ++k)
    if (VulkanDevice::address(*args.inputs[k]) % vector4_bytes(e.inputs[k].dtype)) return false;
  for (std::size_t o = 0; o < args.outputs.size(); ++o)
    if (VulkanDevice::address(*args.outputs[o]) % vector4_bytes(e.outputs[o].dtype)) return false;
  return true;
}

void elementwise_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) { dev.run_elementwise(op, args); }

// The pipelines of a plain (not anchored) fused expression: the scalar kernel, then the vec4
// one where the expression can take it. The sources refer to `expr`.
std::vector<KernelRequest> fused_requests(const VulkanDevice& dev, const FusedExpr& expr) {
  const std::string key = "fused/" + expr.structure_key();
  const char* name = expr.nodes.size() == 1 ? op_name(expr.nodes[0].kind) : "fused elementwise";
  std::vector<KernelRequest> requests{{key, name, [&dev, &expr] { return fused_source(dev, expr, false); }}};
  if (vectorizable(expr))
    requests.push_back(
        {key + "/vec4x" + std::to_string(kVecUnroll), name, [&dev, &expr] { return fused_source(dev, expr, true); }});
  return requests;
}

}  // namespace

std::shared_ptr<CompiledKernel> VulkanDevice::compile_fused(const FusedExpr& expr) {
  commands_->check_alive();
  if (expr.anchored()) return compile_anchored(*this, expr);
  const std::vector<KernelRequest> requests = fused_requests(*this, expr);
  const Pipeline& scalar = pipeline(requests[0].key, requests[0].name, requests[0].source);
  const Pipeline* vec4 =
      requests.size() > 1 ? &pipeline(requests[1].key, requests[1].name, requests[1].source) : nullptr;
  return std::make_shared<FusedKernel>(scalar, vec4);
}

void VulkanDevice::precompile_fused(std::span<const FusedExpr> exprs) {
  commands_->check_alive();
  std::vector<KernelRequest> requests;
  for (const FusedExpr& expr : exprs)
    if (!expr.anchored())
      for (KernelRequest& r : fused_requests(*this, expr)) requests.push_back(std::move(r));
  compile_in_parallel(*this, requests);
}

namespace {

// A node whose kernel code may raise an error (kiln_raise): an integer remainder.
bool raises(const FusedNode& n) { return n.kind == OpKind::remainder && !is_floating(n.compute); }

bool any_raising(const FusedExpr& e) {
  for (const FusedNode& n : e.nodes)
    if (raises(n)) return true;
  const FusedAnchor* a = e.anchored();
  return a && a->prologue_expr() && any_raising(*a->prologue_expr());
}

// The outputs of `expr` (a bit each, as DeferredCheck::outputs) computed from a node that may
// raise; 0 when none is (a scan of the nodes, and nothing allocated, on every launch).
std::uint64_t raising_outputs(const FusedExpr& e) {
  constexpr std::uint64_t kAll = ~std::uint64_t{0};
  if (!any_raising(e)) return 0;
  // An anchored kernel's buffers are not its expression's outputs (fused_arg_tensors): a
  // raising node counts for all of them.
  if (e.anchored()) return kAll;
  std::vector<char> from_raising(e.nodes.size(), 0);
  for (std::size_t i = 0; i < e.nodes.size(); ++i) {
    const FusedNode& n = e.nodes[i];
    from_raising[i] = raises(n);
    for (int j = 0; j < n.arity; ++j)
      if (n.operands[j].kind == FusedOperand::Kind::node && from_raising[n.operands[j].index]) from_raising[i] = 1;
  }
  std::uint64_t mask = 0;
  for (std::size_t o = 0; o < e.output_nodes.size(); ++o)
    if (from_raising[e.output_nodes[o]]) mask |= o < 64 ? std::uint64_t{1} << o : kAll;
  return mask;
}

void record_fused(VulkanDevice& dev, const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args) {
  if (expr.anchored()) return run_anchored(dev, kernel, expr, args);
  const std::int64_t n = expr.shape.numel();
  if (n == 0) return;
  KILN_CHECK(n <= static_cast<std::int64_t>(UINT32_MAX), "fused elementwise",
             "tensors over 2^32 elements are not supported on Vulkan yet (" + expr.shape.str() + ")");
  const auto& k = static_cast<const FusedKernel&>(kernel);
  const auto un = static_cast<std::uint64_t>(n);
  if (k.vec4 && vector_aligned(expr, args))
    return dev.dispatch(*k.vec4, fused_args(expr, args), groups_for(((un + 3) / 4 + kVecUnroll - 1) / kVecUnroll));
  dev.dispatch(k.pipeline, fused_args(expr, args), groups_for(un));
}

}  // namespace

void VulkanDevice::run_fused(const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args) {
  commands_->check_alive();
  const std::uint64_t raising = args.deferred ? raising_outputs(expr) : 0;
  if (!raising) return record_fused(*this, kernel, expr, args);
  std::unique_ptr<DeferredCheck> check = begin_raising(raising);
  try {
    record_fused(*this, kernel, expr, args);
  } catch (...) {
    end_raising();
    throw;
  }
  end_raising();
  *args.deferred = std::move(check);
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
  run_fused(*it->second, expr, KernelArgs{std::span<Buffer* const>(inputs), args.outputs, args.deferred});
}

void register_elementwise_kernels(KernelTable& t) {
  for (std::size_t k = 0; k < kOpCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    if (is_elementwise(kind)) t.set(kind, elementwise_kernel);
  }
}

}  // namespace kiln::vk
