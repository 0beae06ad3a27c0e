// Anchored groups on Vulkan (see vk_anchor.h). The prologue and the epilogue become GLSL
// functions (vk_fused_glsl.h) that the reduction driver and the tiled matmul call per element;
// their parameters follow the anchor kernel's own in the argument block, prologue first. The
// kernels are cached under the expression's structure key, per reduction mode and per matmul
// configuration.
#include "kiln/devices/vulkan/vk_anchor.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/devices/anchored_steps.h"
#include "kiln/devices/vulkan/vk_conv_gemm.h"
#include "kiln/devices/vulkan/vk_fused_glsl.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace {

class AnchoredKernel final : public CompiledKernel {
 public:
  std::string key;                       // the expression's structure key
  std::unique_ptr<AnchoredSteps> steps;  // set when the kernels cannot take the group in
  // A matmul's steps, made when the configuration picked for a product takes no epilogue.
  mutable std::once_flag fallback_once;
  mutable std::unique_ptr<AnchoredSteps> fallback;
};

// Softmax and log_softmax: their output has the input's shape (a rewrite spec).
bool along_dim(const OpIr& op) { return op.kind == OpKind::softmax || op.kind == OpKind::log_softmax; }

// Whether the anchor's kernel takes the group in; the answer depends only on the structure
// (the key holds the reduced dims and which dims are 1, which decide a gather). Softmax never
// gathers; a dims reduction's prologue needs its reduced dims adjacent.
bool in_kernel(const FusedExpr& expr) {
  const FusedAnchor& a = *expr.anchored();
  if (a.op.kind == OpKind::matmul || a.op.kind == OpKind::conv) return a.prologue.empty() && anchors_epilogue(a.op);
  if (!anchors_prologue(a.op)) return false;
  return along_dim(a.op) || !a.prologue_expr() || reduce::ungathered_geometry(a.op).has_value();
}

// The reduce driver's spec of an anchor (anchors_prologue).
reduce::ReduceSpec anchor_spec(const OpIr& op) {
  switch (op.kind) {
    case OpKind::var:
    case OpKind::std:
    case OpKind::logsumexp: return reduce::stat_spec(op);
    case OpKind::softmax:
    case OpKind::log_softmax: return reduce::softmax_spec(op);
    default: return reduce::plain_spec(op);
  }
}

// The inputs of the epilogue: input 0 (the anchor's value) is computed, the rest are read.
std::vector<Buffer*> epilogue_inputs(const KernelArgs& args, const FusedArgLayout& layout) {
  std::vector<Buffer*> in{nullptr};
  for (std::size_t i = layout.epilogue; i < layout.operands; ++i) in.push_back(args.inputs[i]);
  return in;
}

void push_epilogue_args(LaunchArgs& a, const FusedExpr& expr, const KernelArgs& args, const FusedArgLayout& layout) {
  const std::vector<Buffer*> in = epilogue_inputs(args, layout);
  fused::push_args(a, expr, args.outputs.subspan(0, layout.result), in);
}

std::string words_after(const std::string& base, std::size_t words) {
  std::string s = "(";
  s += base;
  s += " + ";
  s += std::to_string(words);
  s += "u)";
  return s;
}

// The GLSL of ReduceFusion: the prologue's parameters from word `base`, the epilogue's after them.
std::string reduce_glsl(const FusedExpr& expr, std::size_t base, bool vector_prologue) {
  const FusedExpr* p = expr.anchored()->prologue_expr();
  const std::string first = std::to_string(base) + "u";
  std::string s, init = "void fused_init() {\n";
  std::size_t words = 0;
  if (p) {
    s += fused::functions(*p, "p_", first, false);
    s += "float prologue(uint i) { return p_value(i); }\n";
    if (vector_prologue) s += fused::value4_function(*p, "p_", first) + "vec4 prologue4(uint i) { return p_value4(i); }\n";
    init += "  p_init();\n";
    words = fused::params_of(*p, "p_", first).vars.size();
  }
  if (!expr.outputs.empty()) {
    s += fused::functions(expr, "e_", words_after(first, words), true);
    s += "void epilogue(uint k, YT y) { e_apply(k, y); }\n";
    init += "  e_init();\n";
  }
  return s + init + "}\n";
}

void run_reduction_group(VulkanDevice& dev, const AnchoredKernel& k, const FusedExpr& expr, const KernelArgs& args) {
  const FusedAnchor& a = *expr.anchored();
  const FusedExpr* p = a.prologue_expr();
  const FusedArgLayout layout = fused_arg_layout(expr);
  const reduce::ReduceSpec spec = anchor_spec(a.op);
  reduce::ReduceFusion f;
  f.key = k.key;
  f.prologue = p != nullptr;
  f.epilogue = !expr.outputs.empty();
  f.store_result = a.keep_result;
  if (p) {
    Buffer* none[1] = {nullptr};  // the prologue's output is never stored
    const std::span<Buffer* const> in = args.inputs.subspan(layout.prologue);
    fused::push_args(f.args, *p, none, in);
    // Four elements at once where the expression allows it and every input is aligned to four.
    f.vector_prologue = fused::vector_value_ok(*p);
    for (std::size_t k = 0; k < in.size() && f.vector_prologue; ++k)
      f.vector_prologue = reduce::address_or_null(in[k]) % vector4_bytes(p->inputs[k].dtype) == 0;
  }
  const auto any_half = [](const auto& tensors) {
    return std::any_of(tensors.begin(), tensors.end(), [](const TensorIr& t) { return is_half(t.dtype); });
  };
  f.half = any_half(expr.inputs) || any_half(expr.outputs) || (p && any_half(p->inputs));
  f.glsl = [&] { return reduce_glsl(expr, 8 + spec.params.size(), f.vector_prologue); };
  if (f.epilogue) push_epilogue_args(f.args, expr, args, layout);
  const Buffer* y = a.keep_result ? args.outputs[layout.result] : nullptr;
  if (along_dim(a.op)) {
    const Buffer* x = p ? nullptr : args.inputs[layout.operands];
    reduce::run_reduction(dev, op_name(a.op.kind), spec, x, y,
                          reduce::geometry_along_dim(a.op, static_cast<int>(a.op.attrs.dim)), &f);
  } else if (p) {
    reduce::run_reduction(dev, op_name(a.op.kind), spec, nullptr, y, *reduce::ungathered_geometry(a.op), &f);
  } else {
    const reduce::CanonicalInput c = reduce::canonical_input(dev, a.op, *args.inputs[layout.operands]);
    reduce::run_reduction(dev, op_name(a.op.kind), spec, c.buffer, y, c.geometry, &f);
  }
}

// The group's elementwise ops as the tiled kernel's store epilogue, its arguments after word
// `base` (the matmul's and the convolution's kernels place them differently).
MatmulEpilogue store_epilogue(const AnchoredKernel& k, const FusedExpr& expr, const KernelArgs& args,
                              const FusedArgLayout& layout, const char* base) {
  MatmulEpilogue e;
  e.key = k.key;
  e.store_c = expr.anchored()->keep_result;
  e.glsl = [&expr, base] {
    return fused::functions(expr, "e_", base, true) +
           "void epilogue_init() { e_init(); }\nvoid epilogue(uint i, float c) { e_apply(i, c); }\n";
  };
  push_epilogue_args(e.args, expr, args, layout);
  return e;
}

void run_matmul_group(VulkanDevice& dev, const AnchoredKernel& k, const FusedExpr& expr, const KernelArgs& args) {
  const FusedAnchor& a = *expr.anchored();
  const FusedArgLayout layout = fused_arg_layout(expr);
  MatmulEpilogue e = store_epilogue(k, expr, args, layout, MatmulEpilogue::kBase);
  if (matmul_with_epilogue(dev, a.op, args.inputs[layout.operands], args.inputs[layout.operands + 1],
                           a.keep_result ? args.outputs[layout.result] : nullptr, e))
    return;
  std::call_once(k.fallback_once, [&] { k.fallback = std::make_unique<AnchoredSteps>(dev, expr); });
  k.fallback->run(dev, expr, args);
}

// A convolution takes its epilogue into the implicit GEMM's store (always the tiled kernel).
void run_conv_group(VulkanDevice& dev, const AnchoredKernel& k, const FusedExpr& expr, const KernelArgs& args) {
  const FusedAnchor& a = *expr.anchored();
  const FusedArgLayout layout = fused_arg_layout(expr);
  MatmulEpilogue e = store_epilogue(k, expr, args, layout, kConvEpilogueBase);
  const Buffer* bias = a.op.inputs.size() > 2 ? args.inputs[layout.operands + 2] : nullptr;
  conv_with_epilogue(dev, a.op, args.inputs[layout.operands], args.inputs[layout.operands + 1], bias,
                     a.keep_result ? args.outputs[layout.result] : nullptr, e);
}

}  // namespace

std::shared_ptr<CompiledKernel> compile_anchored(VulkanDevice& dev, const FusedExpr& expr) {
  auto k = std::make_shared<AnchoredKernel>();
  if (in_kernel(expr))
    k->key = expr.structure_key();
  else
    k->steps = std::make_unique<AnchoredSteps>(dev, expr);
  return k;
}

void run_anchored(VulkanDevice& dev, const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args) {
  const auto& k = static_cast<const AnchoredKernel&>(kernel);
  if (k.steps) return k.steps->run(dev, expr, args);
  if (expr.anchored()->op.kind == OpKind::matmul)
    run_matmul_group(dev, k, expr, args);
  else if (expr.anchored()->op.kind == OpKind::conv)
    run_conv_group(dev, k, expr, args);
  else
    run_reduction_group(dev, k, expr, args);
}

}  // namespace kiln::vk
