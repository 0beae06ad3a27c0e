// The CPU form of a fused expression: the expression's nodes resolved once into calls of the
// elementwise math functions (elementwise_math.h), with the casts their operands need and a
// tile buffer ("slot") for each value, reused once the value is dead. Running it walks the
// output in tiles with the elementwise driver (elementwise_driver.h), so every intermediate
// value lives in L1 and only inputs and outputs touch memory.
#pragma once
#include <memory>
#include <vector>

#include "devices/cpu/elementwise_math.h"
#include "devices/device.h"

namespace kiln::cpu {

class FusedProgram final : public CompiledKernel {
 public:
  explicit FusedProgram(const FusedExpr& expr);
  void run(const FusedExpr& expr, const KernelArgs& args) const;

 private:
  struct Source {
    FusedOperand::Kind kind = FusedOperand::Kind::input;
    std::uint32_t index = 0;  // input index, or slot of a node's value
    DType dtype = DType::f32;  // dtype of the value as stored
    CastFn cast = nullptr;     // to the node's compute dtype, when it differs
  };
  struct Step {
    std::uint8_t arity = 0;
    UnaryFn unary = nullptr;
    BinaryFn binary = nullptr;
    WhereFn where = nullptr;
    Source src[3];
    DType compute = DType::f32;
    std::uint32_t slot = 0;  // where the node's value goes
  };
  struct Tile;

  void eval_tile(Tile& tile) const;

  std::vector<Step> steps_;
  std::uint32_t slot_count_ = 0;
  std::vector<std::uint32_t> output_slots_;  // slot of each output's node
};

}  // namespace kiln::cpu
