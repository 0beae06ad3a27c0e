// The CPU form of a fused expression: the expression's nodes resolved once into calls of the
// elementwise math functions (elementwise_math.h), with the casts their operands need and a
// tile buffer ("slot") for each value, reused once the value is dead. Running it walks the
// output in tiles with the elementwise driver (elementwise_driver.h), so every intermediate
// value lives in L1 and only inputs and outputs touch memory.
#pragma once
#include <array>
#include <memory>
#include <span>
#include <vector>

#include "kiln/devices/cpu/elementwise_driver.h"
#include "kiln/devices/cpu/elementwise_math.h"
#include "kiln/devices/device.h"

namespace kiln::cpu {

class FusedProgram final : public CompiledKernel {
 public:
  static constexpr std::size_t kMaxOutputs = 128;
  struct Tile;  // what evaluating one tile needs (fused_program.cpp)

  explicit FusedProgram(const FusedExpr& expr);
  // The whole expression: args.inputs follow expr.inputs, args.outputs expr.outputs.
  void run(const FusedExpr& expr, const KernelArgs& args) const;

  // One run's binding: the program with its scalar values, its inputs as they lie in memory,
  // and where its outputs go. eval computes any range of output elements, so a reduction can
  // pull its prologue a piece of a row at a time. Everything it points to must outlive it.
  class Bound {
   public:
    Bound(const FusedProgram& program, const FusedExpr& expr, std::span<const EwOperand> inputs,
          std::span<std::byte* const> outputs);
    // Output elements [begin, end): in parallel when many, else on the calling thread.
    void eval(std::int64_t begin, std::int64_t end) const;
    // Output elements [begin, end) of a one-output program into dst (element `begin` at dst).
    // Both ask for the next tile's inputs while they compute (even past `end`: a caller that
    // pulls a piece at a time pulls the next piece soon).
    void eval_into(std::int64_t begin, std::int64_t end, std::byte* dst) const;

   private:
    friend class FusedProgram;
    const FusedProgram& program_;
    const FusedExpr& expr_;
    std::span<std::byte* const> outputs_;
    std::vector<std::byte> scalars_;  // 8 bytes per (node, operand)
    std::array<bool, kMaxOutputs> stream_{};  // per output: written with non-temporal stores
    bool fold_trailing_scale_ = false;        // this run's scalar allows it (see TrailingScale)
    float trailing_scale_ = 1.0f;
    ElementwiseWalk walk_;
  };

 private:
  struct Source {
    FusedOperand::Kind kind = FusedOperand::Kind::input;
    std::uint32_t index = 0;  // input index, or slot of a node's value
    DType dtype = DType::f32;  // dtype of the value as stored
    CastFn cast = nullptr;     // to the node's compute dtype, when it differs
  };
  struct ScalarOp {
    PostOp op = PostOp::none;
    std::uint32_t scalar = 0;  // where its scalar is: node * 3 + operand
  };
  struct Step {
    std::uint32_t node = 0;  // the expression's node this step computes
    std::uint8_t arity = 0;
    UnaryFn unary = nullptr;
    BinaryFn binary = nullptr;
    WhereFn where = nullptr;
    Source src[3];
    DType compute = DType::f32;
    std::uint32_t slot = 0;  // where the node's value goes
    // Folded scalar-op nodes (plan_folds): after this node's op, and (unary nodes) before it.
    ScalarOp post, pre;
    UnaryPostFn unary_post = nullptr;
    BinaryPostFn binary_post = nullptr;
  };
  // The last step, when all it does is scale a value for one output (x * s, or x / s where 1 / s
  // is exact): the output's write-out multiplies as it copies (stream_scale), a pass saved, with
  // the same bits (one rounded multiply either way). Whether s qualifies is known per run.
  struct TrailingScale {
    int output = -1;          // -1: the last step is no such scale
    std::uint32_t slot = 0;   // where the value to scale is
    int scalar_operand = 1;
    bool divides = false;
  };
  static void eval_tile_fn(const EwTile& ew, const void* tile);
  void write_outputs(const Tile& t, std::int64_t len) const;
  struct Folds {
    std::vector<int> post_of;      // node -> the scalar-op node done as its post op, or -1
    std::vector<int> folded_into;  // scalar-op node -> the node whose step makes its value, or -1
    std::vector<int> pre_of;       // unary node -> the scalar-op node done as its pre op, or -1
    std::vector<bool> absorbed;    // scalar-op node done as its reader's pre op
  };
  static Folds plan_folds(const FusedExpr& expr);
  static int scalar_side(const FusedNode& node);  // which operand of a scalar-op node is the scalar
  void find_trailing_scale(const FusedExpr& expr, const std::vector<std::uint32_t>& slot_of);
  void eval_tile(Tile& tile) const;

  std::vector<Step> steps_;
  std::uint32_t slot_count_ = 0;
  std::vector<std::uint32_t> output_slots_;  // slot of each output's node
  TrailingScale trailing_;
};

}  // namespace kiln::cpu
