#include "kiln/devices/cpu/fused_anchor.h"

#include <array>
#include <optional>
#include <utility>

#include "kiln/devices/cpu/reduce_ops.h"

namespace kiln::cpu {

namespace {

// The inputs of `expr` as they lie in memory, from args starting at `first`; with `anchor`,
// input 0 is the anchor's value at anchor->data() instead.
std::size_t bind_inputs(const FusedExpr& expr, const KernelArgs& args, std::size_t first, const Buffer* anchor,
                        std::array<EwOperand, kMaxEwOperands>& out) {
  for (std::size_t k = 0; k < expr.inputs.size(); ++k) {
    const TensorIr& t = expr.inputs[k];
    const void* data = anchor && k == 0 ? anchor->data() : args.inputs[first + k - (anchor ? 1 : 0)]->data();
    out[k] = EwOperand{data, t.dtype, t.dtype, t.shape};
  }
  return expr.inputs.size();
}

// The prologue as the reduction's input.
class PrologueSource final : public ReduceSource {
 public:
  explicit PrologueSource(const FusedProgram::Bound& bound) : bound_(bound) {}
  void fill(std::int64_t at, float* dst, std::int64_t n) const override {
    bound_.eval_into(at, at + n, reinterpret_cast<std::byte*>(dst));
  }

 private:
  const FusedProgram::Bound& bound_;
};

// Whether `expr` is a matmul whose epilogue is out = relu?(product + bias) with the bias along
// the last dim, all f32 (the operands too): its bias input and whether ReLU follows.
std::optional<std::pair<std::size_t, bool>> linear_epilogue(const FusedExpr& expr) {
  const FusedAnchor& a = *expr.anchored();
  const auto f32 = [](const FusedNode& node) { return node.out == DType::f32 && node.compute == DType::f32; };
  if (a.op.kind != OpKind::matmul || a.op.inputs.size() != 2 || a.op.inputs[0].dtype != DType::f32 ||
      a.op.inputs[1].dtype != DType::f32 || a.op.outputs[0].dtype != DType::f32)
    return std::nullopt;
  if (a.keep_result || a.prologue_expr() || expr.outputs.size() != 1 ||
      expr.outputs[0].dtype != DType::f32 || expr.shape != a.op.outputs[0].shape || expr.shape.rank() < 1 ||
      expr.nodes.empty() || expr.nodes.size() > 2 || expr.output_nodes.size() != 1 ||
      expr.output_nodes[0] != expr.nodes.size() - 1)
    return std::nullopt;
  const FusedNode& add = expr.nodes[0];
  if (add.kind != OpKind::add || add.arity != 2 || !f32(add) || add.shape != expr.shape) return std::nullopt;
  const FusedOperand& x = add.operands[0];
  const FusedOperand& y = add.operands[1];
  if (x.kind != FusedOperand::Kind::input || y.kind != FusedOperand::Kind::input) return std::nullopt;
  if ((x.index == 0) == (y.index == 0)) return std::nullopt;  // one of them the product
  const std::size_t bias = x.index == 0 ? y.index : x.index;
  // The bias: n values along the product's last dim ([n] or [1, ..., 1, n]).
  const TensorIr& b = expr.inputs[bias];
  const std::int64_t n = expr.shape[expr.shape.rank() - 1];
  if (b.dtype != DType::f32 || b.shape.rank() < 1 || b.shape[b.shape.rank() - 1] != n || b.shape.numel() != n)
    return std::nullopt;
  if (expr.nodes.size() == 1) return std::pair{bias, false};
  const FusedNode& relu = expr.nodes[1];
  if (relu.kind != OpKind::relu || relu.arity != 1 || !f32(relu) || relu.shape != expr.shape ||
      relu.operands[0].kind != FusedOperand::Kind::node || relu.operands[0].index != 0)
    return std::nullopt;
  return std::pair{bias, true};
}

}  // namespace

AnchoredProgram::AnchoredProgram(const FusedExpr& expr) {
  const FusedAnchor& a = *expr.anchored();
  if (const FusedExpr* p = a.prologue_expr()) prologue_.emplace(*p);
  if (!expr.outputs.empty()) epilogue_.emplace(expr);
  if (const auto linear = linear_epilogue(expr)) bias_epilogue_ = BiasEpilogue{linear->first, linear->second};
}

void AnchoredProgram::run(const FusedExpr& expr, const KernelArgs& args, MemoryPool& pool,
                          const KernelTable& kernels) const {
  const FusedAnchor& a = *expr.anchored();
  const FusedArgLayout layout = fused_arg_layout(expr);
  if (bias_epilogue_) {
    // Straight into the output, bias and ReLU applied by the product: no scratch, no pass of
    // the generic epilogue (expr.inputs[k] is args.inputs[layout.epilogue + k - 1]).
    const auto* bias = static_cast<const float*>(args.inputs[layout.epilogue + bias_epilogue_->bias_input - 1]->data());
    Buffer* out[1] = {args.outputs[0]};
    const KernelArgs product{args.inputs.subspan(layout.operands, layout.prologue - layout.operands),
                             std::span<Buffer* const>(out, 1)};
    if (matmul_with_bias(a.op, product, bias, bias_epilogue_->relu)) return;
  }
  // The anchor's value: its own output when kept, else scratch.
  BufferPtr scratch;
  Buffer* result = a.keep_result ? args.outputs[layout.result] : nullptr;
  if (!result) {
    scratch = pool.allocate(static_cast<std::size_t>(a.op.outputs[0].numel()) * sizeof(float));
    result = scratch.get();
  }
  if (prologue_) {
    const FusedExpr& p = *a.prologue_expr();
    std::array<EwOperand, kMaxEwOperands> inputs;
    const std::size_t n = bind_inputs(p, args, layout.prologue, nullptr, inputs);
    std::byte* none[1] = {nullptr};  // eval_into names the destination
    const FusedProgram::Bound bound(*prologue_, p, std::span<const EwOperand>(inputs.data(), n),
                                    std::span<std::byte* const>(none, 1));
    reduce_from_source(a.op, PrologueSource(bound), static_cast<float*>(result->data()));
  } else {
    // The anchor exactly as the unfused kernel runs it. A matmul too: OpenBLAS's product of a
    // row depends on how the rows are cut into calls (its Haswell kernels, which it also picks
    // on AMD Zen 4, differ in the last bits between a 600-row call and 256-row panels), so the
    // product is one call, and the epilogue reads it afterwards.
    Buffer* out[1] = {result};
    kernels[a.op.kind](a.op, KernelArgs{args.inputs.subspan(layout.operands, layout.prologue - layout.operands),
                                        std::span<Buffer* const>(out, 1)});
  }
  if (!epilogue_) return;
  std::array<EwOperand, kMaxEwOperands> inputs;
  const std::size_t n = bind_inputs(expr, args, layout.epilogue, result, inputs);
  std::array<std::byte*, FusedProgram::kMaxOutputs> outputs;
  for (std::size_t o = 0; o < layout.result; ++o) outputs[o] = static_cast<std::byte*>(args.outputs[o]->data());
  const FusedProgram::Bound bound(*epilogue_, expr, std::span<const EwOperand>(inputs.data(), n),
                                  std::span<std::byte* const>(outputs.data(), layout.result));
  bound.eval(0, expr.shape.numel());
}

}  // namespace kiln::cpu
