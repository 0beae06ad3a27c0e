// The op registry: for every OpKind its name, family, shape rule and the traits the scheduler
// needs (may it run in place, is it a view). The backward rules of autograd/ hang off the same
// table, keyed by OpKind. Shape rules run on the caller's thread and throw kiln::Error.
#pragma once
#include <array>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/ops/ir.h"

namespace kiln {

enum class OpFamily : std::uint8_t { control, creation, unary, binary, ternary, reduce, linalg, layout, index, conv, norm };

// Fills `outputs` (shape, dtype) from op.inputs and op.attrs; throws kiln::Error on bad input.
using ShapeRule = void (*)(const OpIr& op, TensorList& outputs);

struct OpInfo {
  const char* name = "?";
  OpFamily family = OpFamily::control;
  ShapeRule shape_rule = nullptr;
  // Output i may reuse the buffer of a ReadWrite input with the same shape and dtype: the
  // kernel reads element k of every input before it writes element k of the output.
  bool inplace_ok = false;
  // The output is the input's buffer reinterpreted (reshape): no kernel runs.
  bool view = false;
};

class OpRegistry {
 public:
  static const OpRegistry& get();
  const OpInfo& operator[](OpKind k) const { return infos_[static_cast<std::size_t>(k)]; }
  OpInfo& at(OpKind k) { return infos_[static_cast<std::size_t>(k)]; }

 private:
  OpRegistry();
  std::array<OpInfo, kOpCount> infos_{};
};

inline const OpInfo& op_info(OpKind k) { return OpRegistry::get()[k]; }
inline const char* op_name(OpKind k) { return op_info(k).name; }

// Runs the shape rule of op.kind and returns the output metas.
TensorList infer_outputs(const OpIr& op);
// The same, appended to `out` (the submission path fills the message's outputs in place).
void infer_outputs(const OpIr& op, TensorList& out);

// Each family registers its shape rules and traits (ops/<family>.cpp).
void register_creation_ops(OpRegistry& r);
void register_elementwise_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_linalg_ops(OpRegistry& r);
void register_layout_ops(OpRegistry& r);
void register_index_ops(OpRegistry& r);
void register_conv_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);  // ops/pool.cpp
void register_norm_ops(OpRegistry& r);

// Shared helpers for shape rules.
std::string describe(const TensorIr& t);  // "f32[2, 3]"
void check_arity(const OpIr& op, std::size_t n);

}  // namespace kiln
