#include "kiln/devices/cpu/fused_program.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/elementwise_driver.h"
#include "kiln/ops/elementwise_rules.h"

namespace kiln::cpu {

namespace {

constexpr std::size_t kSlotBytes = kTile * 8;  // one tile of the widest dtype
constexpr std::size_t kMaxInputs = kMaxEwOperands;

DType operand_dtype(const FusedNode& node, int operand) {
  return elementwise_operand_dtype(node.kind, static_cast<std::size_t>(operand), node.compute);
}

void store_scalar(double v, DType t, void* dst) {
  switch (t) {
    case DType::f32: { const float f = static_cast<float>(v); std::memcpy(dst, &f, 4); break; }
    case DType::i64: { const auto i = static_cast<std::int64_t>(v); std::memcpy(dst, &i, 8); break; }
    case DType::bool_: { const std::uint8_t b = v != 0.0; std::memcpy(dst, &b, 1); break; }
    default: throw Error("fused", std::string("scalar of dtype ") + dtype_name(t) + " on the CPU");
  }
}

}  // namespace

// What evaluating one tile needs: the driver's tile (inputs), the run's scalars and outputs,
// and this thread's slot buffers.
struct FusedProgram::Tile {
  const Bound* run = nullptr;
  const FusedExpr* expr = nullptr;
  const std::byte* scalars = nullptr;  // 8 bytes per (node, operand)
  std::byte* into = nullptr;           // eval_into: where output 0's element `into_first` goes
  std::int64_t into_first = 0;
  const EwTile* ew = nullptr;
  std::byte* slots = nullptr;
  std::byte* scratch[3] = {};
  void* slot(std::uint32_t i) const { return slots + i * kSlotBytes; }
};

FusedProgram::FusedProgram(const FusedExpr& expr) {
  KILN_CHECK(expr.inputs.size() <= kMaxInputs && expr.outputs.size() <= kMaxOutputs, "fused",
             "too many inputs or outputs for one kernel");
  const std::size_t n = expr.nodes.size();
  const Folds folds = plan_folds(expr);
  // What a step reads: its node's operands, except that a unary node with a pre op reads the
  // pre op's operand.
  auto operand = [&](std::size_t i, int j) -> const FusedOperand& {
    const int pre = folds.pre_of[i];
    return pre >= 0 ? expr.nodes[pre].operands[scalar_side(expr.nodes[pre]) == 0 ? 1 : 0] : expr.nodes[i].operands[j];
  };
  auto is_step = [&](std::size_t i) { return folds.folded_into[i] < 0 && !folds.absorbed[i]; };
  // Last step that reads each node's value; outputs live to the end of the tile.
  std::vector<std::size_t> last_use(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (is_step(i))
      for (int j = 0; j < expr.nodes[i].arity; ++j)
        if (operand(i, j).kind == FusedOperand::Kind::node) last_use[operand(i, j).index] = i;
  for (std::uint32_t o : expr.output_nodes) last_use[o] = n;

  std::vector<std::uint32_t> slot_of(n), free_slots;
  for (std::size_t i = 0; i < n; ++i) {
    const FusedNode& node = expr.nodes[i];
    if (folds.folded_into[i] >= 0) {  // its value is made by that node's step, in that step's slot
      slot_of[i] = slot_of[folds.folded_into[i]];
      continue;
    }
    if (folds.absorbed[i]) continue;  // its one reader applies it to its operand
    Step step;
    step.node = static_cast<std::uint32_t>(i);
    step.arity = node.arity;
    step.compute = node.compute;
    for (int j = 0; j < node.arity; ++j) {
      const FusedOperand& op = operand(i, j);
      Source& src = step.src[j];
      src.kind = op.kind;
      if (op.kind == FusedOperand::Kind::scalar) continue;  // stored in the compute dtype
      src.index = op.kind == FusedOperand::Kind::node ? slot_of[op.index] : op.index;
      src.dtype = op.kind == FusedOperand::Kind::node ? expr.nodes[op.index].out : expr.inputs[op.index].dtype;
      const DType want = operand_dtype(node, j);
      if (src.dtype != want) {
        src.cast = cast_fn(src.dtype, want);
        KILN_CHECK(src.cast, op_name(node.kind), std::string("no CPU cast from ") + dtype_name(src.dtype) + " to " + dtype_name(want));
      }
    }
    if (node.kind == OpKind::cast) {
      // The operand's cast is the whole op.
    } else if (node.kind == OpKind::where) {
      step.where = where_fn(node.compute);
    } else if (node.arity == 2) {
      step.binary = binary_fn(node.kind, node.compute);
    } else {
      step.unary = unary_fn(node.kind, node.compute);
    }
    KILN_CHECK(node.kind == OpKind::cast || step.where || step.binary || step.unary, op_name(node.kind),
               std::string("no CPU kernel for compute dtype ") + dtype_name(node.compute));
    auto scalar_op = [&](int j) {
      const int side = scalar_side(expr.nodes[j]);
      return ScalarOp{post_op_of(expr.nodes[j].kind, side), static_cast<std::uint32_t>(j * 3 + side)};
    };
    if (folds.post_of[i] >= 0) step.post = scalar_op(folds.post_of[i]);
    if (folds.pre_of[i] >= 0) step.pre = scalar_op(folds.pre_of[i]);
    if (step.post.op != PostOp::none || step.pre.op != PostOp::none) {
      step.unary_post = node.arity == 1 ? unary_post_fn(node.kind) : nullptr;
      step.binary_post = node.arity == 2 ? binary_post_fn(node.kind) : nullptr;
    }
    // Operands whose last use is this step free their slots first: the math functions allow
    // the output to alias an operand, so a chain runs in one or two slots. Not an operand with
    // narrower elements than the output (where's bool condition next to an f32 result): writing
    // element k would overwrite condition bytes k+1.. before they are read. Those slots are
    // freed once this step's slot is chosen.
    std::vector<std::uint32_t> freed_after;
    for (int j = 0; j < node.arity; ++j) {
      const FusedOperand& op = operand(i, j);
      if (op.kind != FusedOperand::Kind::node || last_use[op.index] != i) continue;
      const std::uint32_t s = slot_of[op.index];
      if (std::find(free_slots.begin(), free_slots.end(), s) != free_slots.end() ||
          std::find(freed_after.begin(), freed_after.end(), s) != freed_after.end())
        continue;
      if (dtype_size(expr.nodes[op.index].out) < dtype_size(node.out)) freed_after.push_back(s);
      else free_slots.push_back(s);
    }
    if (free_slots.empty()) free_slots.push_back(slot_count_++);
    step.slot = free_slots.back();
    free_slots.pop_back();
    free_slots.insert(free_slots.end(), freed_after.begin(), freed_after.end());
    slot_of[i] = step.slot;
    steps_.push_back(step);
  }
  for (std::uint32_t o : expr.output_nodes) output_slots_.push_back(slot_of[o]);
  find_trailing_scale(expr, slot_of);
}

int FusedProgram::scalar_side(const FusedNode& node) {
  return node.operands[0].kind == FusedOperand::Kind::scalar ? 0 : 1;
}

// Nodes done as part of another node's step (elementwise_math.h, Post). A scalar-op node (f32
// t + s, s + t, t - s, s - t, t * s, s * t, t / s or s / t) that no output is:
//   - becomes the post op of t's node, when that is an f32 unary or binary node that takes post
//     ops, no other node reads t, t is no output (the post op overwrites it) and that node has
//     no post op yet;
//   - else becomes the pre op of its one reader, when that is an f32 unary node that takes
//     them and t is f32 (read as it is: no cast).
// Not a node that is an output: the last one may be a trailing scale (find_trailing_scale).
FusedProgram::Folds FusedProgram::plan_folds(const FusedExpr& expr) {
  const std::size_t n = expr.nodes.size();
  Folds f{std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<bool>(n, false)};
  std::vector<int> uses(n, 0), reader(n, -1);
  std::vector<bool> is_output(n, false);
  for (std::size_t i = 0; i < n; ++i)
    for (int j = 0; j < expr.nodes[i].arity; ++j)
      if (const FusedOperand& op = expr.nodes[i].operands[j]; op.kind == FusedOperand::Kind::node) {
        ++uses[op.index];
        reader[op.index] = static_cast<int>(i);
      }
  for (std::uint32_t o : expr.output_nodes) {
    ++uses[o];
    is_output[o] = true;
  }
  auto f32_valued = [](const FusedNode& node) { return node.compute == DType::f32 && node.out == DType::f32; };
  auto takes_ops = [&](const FusedNode& node) {
    if (!f32_valued(node)) return false;
    if (node.arity == 1) return unary_post_fn(node.kind) != nullptr;
    return node.arity == 2 && binary_post_fn(node.kind) != nullptr;
  };
  for (std::size_t j = 0; j < n; ++j) {
    const FusedNode& node = expr.nodes[j];
    if (node.arity != 2 || !f32_valued(node) || uses[j] == 0 || is_output[j]) continue;
    const bool s0 = node.operands[0].kind == FusedOperand::Kind::scalar;
    if (s0 == (node.operands[1].kind == FusedOperand::Kind::scalar) || post_op_of(node.kind, s0 ? 0 : 1) == PostOp::none)
      continue;
    const FusedOperand& value = node.operands[s0 ? 1 : 0];
    if (value.kind == FusedOperand::Kind::node) {
      const std::uint32_t t = value.index;
      if (takes_ops(expr.nodes[t]) && uses[t] == 1 && f.post_of[t] < 0 && f.folded_into[t] < 0 && !f.absorbed[t]) {
        f.folded_into[j] = static_cast<int>(t);
        f.post_of[t] = static_cast<int>(j);
        continue;
      }
    }
    const DType value_dtype = value.kind == FusedOperand::Kind::node ? expr.nodes[value.index].out : expr.inputs[value.index].dtype;
    const int r = reader[j];
    if (uses[j] == 1 && value_dtype == DType::f32 && expr.nodes[r].arity == 1 && takes_ops(expr.nodes[r]) &&
        f.pre_of[r] < 0) {
      f.absorbed[j] = true;
      f.pre_of[r] = static_cast<int>(j);
    }
  }
  return f;
}

void FusedProgram::find_trailing_scale(const FusedExpr& expr, const std::vector<std::uint32_t>& slot_of) {
  if (expr.nodes.empty()) return;
  const std::uint32_t last = static_cast<std::uint32_t>(expr.nodes.size() - 1);
  const FusedNode& node = expr.nodes[last];
  const Step& step = steps_.back();
  if ((node.kind != OpKind::mul && node.kind != OpKind::div) || node.compute != DType::f32 || node.out != DType::f32)
    return;
  // div: only x / s; mul: the scalar on either side.
  const int scalar = node.operands[1].kind == FusedOperand::Kind::scalar ? 1
                     : node.kind == OpKind::mul && node.operands[0].kind == FusedOperand::Kind::scalar ? 0
                                                                                                       : -1;
  if (scalar < 0) return;
  const FusedOperand& value = node.operands[1 - scalar];
  if (value.kind != FusedOperand::Kind::node || step.src[1 - scalar].cast) return;
  if (std::count(expr.output_nodes.begin(), expr.output_nodes.end(), last) != 1) return;
  const auto at = std::find(expr.output_nodes.begin(), expr.output_nodes.end(), last);
  trailing_ = {static_cast<int>(at - expr.output_nodes.begin()), slot_of[value.index], scalar, node.kind == OpKind::div};
}

void FusedProgram::eval_tile(Tile& t) const {
  // This thread's slot buffers.
  thread_local std::vector<std::byte> scratch;
  const std::size_t bytes = (slot_count_ + 3) * kSlotBytes;
  if (scratch.size() < bytes) scratch.resize(bytes);
  t.slots = scratch.data();
  for (int j = 0; j < 3; ++j) t.scratch[j] = scratch.data() + (slot_count_ + j) * kSlotBytes;
  const std::int64_t len = t.ew->n;
  const std::size_t steps = steps_.size() - (t.run->fold_trailing_scale_ ? 1 : 0);
  for (std::size_t i = 0; i < steps; ++i) {
    const Step& s = steps_[i];
    prefetch_next_part(*t.ew, t.expr->inputs.size(), i, steps);
    const void* p[3];
    std::int64_t st[3];
    for (int j = 0; j < s.arity; ++j) {
      const Source& src = s.src[j];
      switch (src.kind) {
        case FusedOperand::Kind::input: p[j] = t.ew->in[src.index]; st[j] = t.ew->stride[src.index]; break;
        case FusedOperand::Kind::node: p[j] = t.slot(src.index); st[j] = 1; break;
        case FusedOperand::Kind::scalar: p[j] = t.scalars + (s.node * 3 + j) * 8; st[j] = 0; break;
      }
      if (src.cast) {
        src.cast(p[j], t.scratch[j], st[j] ? len : 1);
        p[j] = t.scratch[j];
      }
    }
    void* dst = t.slot(s.slot);
    const FusedNode& node = t.expr->nodes[s.node];
    if (s.pre.op != PostOp::none || s.post.op != PostOp::none) {
      auto scalar_op = [&](const ScalarOp& o) {
        float v = 0.0f;
        if (o.op != PostOp::none) std::memcpy(&v, t.scalars + o.scalar * 8, sizeof v);
        return make_post(o.op, v);
      };
      if (s.unary_post) s.unary_post(p[0], dst, len, node.attrs, scalar_op(s.pre), scalar_op(s.post));
      else s.binary_post(p[0], st[0], p[1], st[1], dst, len, scalar_op(s.post));
    } else if (s.unary) {
      s.unary(p[0], dst, len, node.attrs);
    } else if (s.binary) {
      s.binary(p[0], st[0], p[1], st[1], dst, len);
    } else if (s.where) {
      s.where(p[0], st[0], p[1], st[1], p[2], st[2], dst, len);
    } else {
      std::memcpy(dst, p[0], len * dtype_size(node.out));  // cast: done above
    }
  }
  write_outputs(t, len);
}

// Outputs last: an output may be an input's buffer, and every input of the tile is read by now.
void FusedProgram::write_outputs(const Tile& t, std::int64_t len) const {
  for (std::size_t o = 0; o < output_slots_.size(); ++o) {
    const std::size_t es = dtype_size(t.expr->outputs[o].dtype);
    const auto at = static_cast<std::int64_t>(es);
    std::byte* dst = t.into ? t.into + (t.ew->first - t.into_first) * at
                            : t.run->outputs_[o] + t.ew->first * at;
    const bool stream = t.run->stream_[o];
    if (t.run->fold_trailing_scale_ && static_cast<int>(o) == trailing_.output) {
      const auto* src = static_cast<const float*>(t.slot(trailing_.slot));
      auto* out = reinterpret_cast<float*>(dst);
      const float scale = t.run->trailing_scale_;
      if (stream) stream_scale(out, src, scale, static_cast<std::size_t>(len));
      else for (std::int64_t i = 0; i < len; ++i) out[i] = src[i] * scale;
      continue;
    }
    const auto* src = static_cast<const std::byte*>(t.slot(output_slots_[o]));
    if (stream) stream_copy(dst, src, len * es);
    else std::memcpy(dst, src, len * es);
  }
}

FusedProgram::Bound::Bound(const FusedProgram& program, const FusedExpr& expr, std::span<const EwOperand> inputs,
                           std::span<std::byte* const> outputs)
    : program_(program),
      expr_(expr),
      outputs_(outputs),
      scalars_(expr.nodes.size() * 3 * 8),
      walk_(expr.shape, expr.outputs.empty() ? DType::f32 : expr.outputs[0].dtype, nullptr, inputs) {
  // Scalar operands, converted to their node's compute dtype once per run.
  for (std::size_t i = 0; i < expr.nodes.size(); ++i)
    for (int j = 0; j < expr.nodes[i].arity; ++j)
      if (expr.nodes[i].operands[j].kind == FusedOperand::Kind::scalar)
        store_scalar(fused_scalar_value(expr.nodes[i], j), operand_dtype(expr.nodes[i], j), scalars_.data() + (i * 3 + j) * 8);
  for (std::size_t o = 0; o < expr.outputs.size(); ++o)
    stream_[o] = should_stream(outputs[o], expr.shape.numel() * dtype_size(expr.outputs[o].dtype), inputs);
  if (const TrailingScale& ts = program.trailing_; ts.output >= 0) {
    float s;
    std::memcpy(&s, scalars_.data() + ((expr.nodes.size() - 1) * 3 + ts.scalar_operand) * 8, sizeof s);
    fold_trailing_scale_ = !ts.divides || exact_reciprocal(s);
    trailing_scale_ = ts.divides ? 1.0f / s : s;
  }
}

void FusedProgram::eval_tile_fn(const EwTile& ew, const void* ctx) {
  Tile t = *static_cast<const Tile*>(ctx);
  t.ew = &ew;
  t.run->program_.eval_tile(t);
}

void FusedProgram::Bound::eval(std::int64_t begin, std::int64_t end) const {
  const Tile base{this, &expr_, scalars_.data()};
  walk_.run(begin, end, eval_tile_fn, &base, ElementwiseWalk::Prefetch::hand_over);
}

void FusedProgram::Bound::eval_into(std::int64_t begin, std::int64_t end, std::byte* dst) const {
  const Tile base{this, &expr_, scalars_.data(), dst, begin};
  walk_.run(begin, end, eval_tile_fn, &base, ElementwiseWalk::Prefetch::hand_over);
}

void FusedProgram::run(const FusedExpr& expr, const KernelArgs& args) const {
  if (expr.shape.numel() == 0) return;
  // Inputs as they lie in memory; casts happen per node, since two nodes may read one input in
  // different compute dtypes.
  std::array<EwOperand, kMaxEwOperands> operands;
  for (std::size_t k = 0; k < expr.inputs.size(); ++k)
    operands[k] = EwOperand{args.inputs[k]->data(), expr.inputs[k].dtype, expr.inputs[k].dtype, expr.inputs[k].shape};
  std::array<std::byte*, kMaxOutputs> outputs;
  for (std::size_t o = 0; o < expr.outputs.size(); ++o) outputs[o] = static_cast<std::byte*>(args.outputs[o]->data());
  const Bound bound(*this, expr, std::span<const EwOperand>(operands.data(), expr.inputs.size()),
                    std::span<std::byte* const>(outputs.data(), expr.outputs.size()));
  bound.eval(0, expr.shape.numel());
}

}  // namespace kiln::cpu
