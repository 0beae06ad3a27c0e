// The CPU form of an anchored fused expression (ops/fused_expr.h, FusedAnchor): a reduction
// (or softmax) that pulls its input from a fused prologue a piece of a row at a time, or a
// reduction or matmul whose result passes through a fused epilogue before it is stored. The
// prologue's values are never written to memory; the anchor's result is written to a tensor
// only when someone holds it (else to scratch, which the epilogue reads right after).
#pragma once
#include <optional>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/fused_program.h"

namespace kiln::cpu {

class AnchoredProgram final : public CompiledKernel {
 public:
  explicit AnchoredProgram(const FusedExpr& expr);
  // args as ops/fused_expr.h's FusedArgLayout orders them; scratch comes from `pool`.
  void run(const FusedExpr& expr, const KernelArgs& args, MemoryPool& pool, const KernelTable& kernels) const;

 private:
  std::optional<FusedProgram> prologue_;
  std::optional<FusedProgram> epilogue_;  // absent when the expression has no epilogue outputs
  // A Linear layer's epilogue (the product plus a bias along its last dim, then maybe ReLU, all
  // f32): applied by the product itself when it runs on packed weights or a narrow B.
  struct BiasEpilogue {
    std::size_t bias_input;  // into the expression's inputs
    bool relu;
  };
  std::optional<BiasEpilogue> bias_epilogue_;
};

}  // namespace kiln::cpu
