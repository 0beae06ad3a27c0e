// The CPU form of an anchored fused expression (ops/fused_expr.h, FusedAnchor): a plain
// reduction that pulls its input from a fused prologue a piece of a row at a time, or a
// reduction or matmul whose result passes through a fused epilogue before it is stored — a
// matmul's a panel of rows at a time, while the panel is in cache. Neither the prologue's
// values nor (unless someone holds it) the anchor's result is ever written to a tensor.
#pragma once
#include <array>
#include <optional>

#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/fused_program.h"

namespace kiln::cpu {

class AnchoredProgram final : public CompiledKernel {
 public:
  explicit AnchoredProgram(const FusedExpr& expr);
  // args as ops/fused_expr.h's FusedArgLayout orders them; scratch comes from `pool`.
  void run(const FusedExpr& expr, const KernelArgs& args, MemoryPool& pool, const KernelTable& kernels) const;

 private:
  void run_reduction(const FusedExpr& expr, const KernelArgs& args, Buffer& result, const KernelTable& kernels) const;
  void run_matmul(const FusedExpr& expr, const KernelArgs& args, Buffer& product) const;
  // The epilogue bound to one run; input 0 (the anchor's value) at `anchor`. It points into
  // itself, so it is filled where it stays.
  struct EpilogueRun {
    std::array<EwOperand, kMaxEwOperands> inputs;
    std::array<std::byte*, FusedProgram::kMaxOutputs> outputs;
    std::optional<FusedProgram::Bound> bound;
  };
  void bind_epilogue(const FusedExpr& expr, const KernelArgs& args, const Buffer& anchor, EpilogueRun& run) const;

  std::optional<FusedProgram> prologue_;
  std::optional<FusedProgram> epilogue_;  // absent when the expression has no epilogue outputs
};

}  // namespace kiln::cpu
