#include "kiln/devices/anchored_steps.h"

#include <vector>

namespace kiln {

namespace {

// The epilogue alone: the expression without its anchor (input 0 is then read from memory).
FusedExpr epilogue_of(const FusedExpr& expr) {
  FusedExpr e;
  e.shape = expr.shape;
  e.inputs = expr.inputs;
  e.nodes = expr.nodes;
  e.output_nodes = expr.output_nodes;
  e.outputs = expr.outputs;
  return e;
}

}  // namespace

AnchoredSteps::AnchoredSteps(DeviceBackend& device, const FusedExpr& expr) {
  const FusedAnchor& a = *expr.anchored();
  if (const FusedExpr* p = a.prologue_expr()) prologue_ = device.compile_fused(*p);
  if (!expr.outputs.empty()) epilogue_ = device.compile_fused(epilogue_of(expr));
}

void AnchoredSteps::run(DeviceBackend& device, const FusedExpr& expr, const KernelArgs& args) const {
  const FusedAnchor& a = *expr.anchored();
  const FusedArgLayout layout = fused_arg_layout(expr);
  std::vector<Buffer*> operands;
  BufferPtr operand;
  if (const FusedExpr* p = a.prologue_expr()) {
    operand = device.memory().allocate(a.op.inputs[0].bytes());
    Buffer* out[1] = {operand.get()};
    device.run_fused(*prologue_, *p,
                     KernelArgs{args.inputs.subspan(layout.prologue), std::span<Buffer* const>(out, 1)});
    operands.push_back(operand.get());
  }
  for (std::size_t i = layout.operands; i < layout.prologue; ++i) operands.push_back(args.inputs[i]);
  BufferPtr scratch;
  Buffer* result = a.keep_result ? args.outputs[layout.result] : nullptr;
  if (!result) {
    scratch = device.memory().allocate(a.op.outputs[0].bytes());
    result = scratch.get();
  }
  Buffer* out[1] = {result};
  device.run(a.op, KernelArgs{std::span<Buffer* const>(operands), std::span<Buffer* const>(out, 1)});
  if (!epilogue_) return;
  std::vector<Buffer*> inputs{result};
  inputs.insert(inputs.end(), args.inputs.begin() + static_cast<std::ptrdiff_t>(layout.epilogue),
                args.inputs.begin() + static_cast<std::ptrdiff_t>(layout.operands));
  device.run_fused(*epilogue_, epilogue_of(expr),
                   KernelArgs{std::span<Buffer* const>(inputs), args.outputs.subspan(0, layout.result)});
}

}  // namespace kiln
