#include "devices/cpu/fused_program.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/parallel.h"
#include "ops/elementwise_rules.h"

namespace kiln::cpu {

namespace {

constexpr std::size_t kSlotBytes = kTile * 8;  // one tile of the widest dtype
constexpr int kMaxInputs = 16;
constexpr int kMaxOutputs = 128;

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

// The iteration space after merging dims that are contiguous for every operand: `rows` runs of
// `inner` elements; an input's inner stride is 0 (broadcast) or 1.
struct Walk {
  int rank = 0;                                      // outer (collapsed) dims
  std::array<std::int64_t, kMaxRank> size{};         // outer dims
  std::array<std::array<std::int64_t, kMaxRank>, kMaxInputs> stride{};  // per input, outer dims
  std::array<std::int64_t, kMaxInputs> inner_stride{};
  std::int64_t inner = 1;
  std::int64_t rows = 1;
};

Walk make_walk(const FusedExpr& expr) {
  const Shape& s = expr.shape;
  const int r = s.rank();
  const std::size_t n_in = expr.inputs.size();
  // Strides of every input against the iteration shape, 0 where it broadcasts.
  std::array<std::array<std::int64_t, kMaxRank>, kMaxInputs> st{};
  for (std::size_t k = 0; k < n_in; ++k) {
    const Shape& in = expr.inputs[k].shape;
    const Shape cs = contiguous_strides(in);
    for (int d = 0; d < r; ++d) {
      const int id = in.rank() - r + d;
      st[k][d] = (id < 0 || in[id] == 1) ? 0 : cs[id];
    }
  }
  // Merge from the innermost dim outwards; dims of size 1 vanish.
  std::array<std::int64_t, kMaxRank> size{};
  std::array<std::array<std::int64_t, kMaxRank>, kMaxInputs> cst{};
  int m = 0;  // collapsed dims, innermost first
  for (int d = r - 1; d >= 0; --d) {
    if (s[d] == 1) continue;
    bool merge = m > 0;
    for (std::size_t k = 0; k < n_in && merge; ++k) merge = st[k][d] == cst[k][m - 1] * size[m - 1];
    if (merge) {
      size[m - 1] *= s[d];
    } else {
      size[m] = s[d];
      for (std::size_t k = 0; k < n_in; ++k) cst[k][m] = st[k][d];
      ++m;
    }
  }
  Walk w;
  if (m > 0) {
    w.inner = size[0];
    for (std::size_t k = 0; k < n_in; ++k) w.inner_stride[k] = cst[k][0];
  }
  w.rank = std::max(m - 1, 0);
  for (int i = 0; i < w.rank; ++i) {  // outer dims, outermost first
    w.size[i] = size[m - 1 - i];
    for (std::size_t k = 0; k < n_in; ++k) w.stride[k][i] = cst[k][m - 1 - i];
    w.rows *= w.size[i];
  }
  return w;
}

}  // namespace

// What one worker needs to evaluate tiles: its slot buffers and this tile's operand pointers.
struct FusedProgram::Tile {
  const FusedExpr* expr = nullptr;
  std::byte* slots = nullptr;
  std::byte* scratch[3] = {};
  const std::byte* scalars = nullptr;  // 8 bytes per (step, operand)
  const void* in[kMaxInputs] = {};
  std::int64_t in_stride[kMaxInputs] = {};
  std::int64_t len = 0;
  void* slot(std::uint32_t i) const { return slots + i * kSlotBytes; }
};

FusedProgram::FusedProgram(const FusedExpr& expr) {
  KILN_CHECK(expr.inputs.size() <= kMaxInputs && expr.outputs.size() <= kMaxOutputs, "fused",
             "too many inputs or outputs for one kernel");
  const std::size_t n = expr.nodes.size();
  // Last step that reads each node's value; outputs live to the end of the tile.
  std::vector<std::size_t> last_use(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (int j = 0; j < expr.nodes[i].arity; ++j)
      if (expr.nodes[i].operands[j].kind == FusedOperand::Kind::node) last_use[expr.nodes[i].operands[j].index] = i;
  for (std::uint32_t o : expr.output_nodes) last_use[o] = n;

  std::vector<std::uint32_t> slot_of(n), free_slots;
  for (std::size_t i = 0; i < n; ++i) {
    const FusedNode& node = expr.nodes[i];
    Step step;
    step.arity = node.arity;
    step.compute = node.compute;
    for (int j = 0; j < node.arity; ++j) {
      const FusedOperand& op = node.operands[j];
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
    // Operands whose last use is this step free their slots first: the math functions allow
    // the output to alias an operand, so a chain runs in one or two slots.
    for (int j = 0; j < node.arity; ++j) {
      const FusedOperand& op = node.operands[j];
      if (op.kind == FusedOperand::Kind::node && last_use[op.index] == i &&
          std::find(free_slots.begin(), free_slots.end(), slot_of[op.index]) == free_slots.end())
        free_slots.push_back(slot_of[op.index]);
    }
    if (free_slots.empty()) free_slots.push_back(slot_count_++);
    step.slot = free_slots.back();
    free_slots.pop_back();
    slot_of[i] = step.slot;
    steps_.push_back(step);
  }
  for (std::uint32_t o : expr.output_nodes) output_slots_.push_back(slot_of[o]);
}

void FusedProgram::eval_tile(Tile& t) const {
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    const void* p[3];
    std::int64_t st[3];
    for (int j = 0; j < s.arity; ++j) {
      const Source& src = s.src[j];
      switch (src.kind) {
        case FusedOperand::Kind::input: p[j] = t.in[src.index]; st[j] = t.in_stride[src.index]; break;
        case FusedOperand::Kind::node: p[j] = t.slot(src.index); st[j] = 1; break;
        case FusedOperand::Kind::scalar: p[j] = t.scalars + (i * 3 + j) * 8; st[j] = 0; break;
      }
      if (src.cast) {
        src.cast(p[j], t.scratch[j], st[j] ? t.len : 1);
        p[j] = t.scratch[j];
      }
    }
    void* dst = t.slot(s.slot);
    if (s.unary) s.unary(p[0], dst, t.len, t.expr->nodes[i].attrs);
    else if (s.binary) s.binary(p[0], st[0], p[1], st[1], dst, t.len);
    else if (s.where) s.where(p[0], st[0], p[1], st[1], p[2], st[2], dst, t.len);
    else std::memcpy(dst, p[0], t.len * dtype_size(t.expr->nodes[i].out));  // cast: done above
  }
}

void FusedProgram::run(const FusedExpr& expr, const KernelArgs& args) const {
  const std::int64_t numel = expr.shape.numel();
  if (numel == 0) return;
  const Walk w = make_walk(expr);
  const std::size_t n_in = expr.inputs.size(), n_out = expr.outputs.size();

  // Scalar operands, converted to their node's compute dtype once per run.
  std::vector<std::byte> scalars(steps_.size() * 3 * 8);
  for (std::size_t i = 0; i < steps_.size(); ++i)
    for (int j = 0; j < steps_[i].arity; ++j)
      if (steps_[i].src[j].kind == FusedOperand::Kind::scalar)
        store_scalar(fused_scalar_value(expr.nodes[i], j), operand_dtype(expr.nodes[i], j), scalars.data() + (i * 3 + j) * 8);

  const std::int64_t tiles_per_row = (w.inner + kTile - 1) / kTile;
  const std::int64_t units = w.rows * tiles_per_row;
  const std::int64_t grain = std::max<std::int64_t>(1, kDefaultGrain / std::min<std::int64_t>(w.inner, kTile));
  const std::size_t scratch_bytes = (slot_count_ + 3) * kSlotBytes;

  parallel_for(units, grain, [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<std::byte> scratch;
    if (scratch.size() < scratch_bytes) scratch.resize(scratch_bytes);
    Tile t;
    t.expr = &expr;
    t.slots = scratch.data();
    for (int j = 0; j < 3; ++j) t.scratch[j] = scratch.data() + (slot_count_ + j) * kSlotBytes;
    t.scalars = scalars.data();
    for (std::int64_t u = begin; u < end; ++u) {
      const std::int64_t row = u / tiles_per_row, start = (u % tiles_per_row) * kTile;
      t.len = std::min<std::int64_t>(kTile, w.inner - start);
      // Offsets of this row in every input: walk the outer dims of the row index.
      std::int64_t off[kMaxInputs] = {};
      std::int64_t rest = row;
      for (int d = w.rank - 1; d >= 0; --d) {
        const std::int64_t idx = rest % w.size[d];
        rest /= w.size[d];
        for (std::size_t k = 0; k < n_in; ++k) off[k] += idx * w.stride[k][d];
      }
      for (std::size_t k = 0; k < n_in; ++k) {
        t.in_stride[k] = w.inner_stride[k];
        t.in[k] = static_cast<const std::byte*>(args.inputs[k]->data()) +
                  (off[k] + start * w.inner_stride[k]) * static_cast<std::int64_t>(dtype_size(expr.inputs[k].dtype));
      }
      eval_tile(t);
      const std::int64_t first = row * w.inner + start;
      for (std::size_t o = 0; o < n_out; ++o) {
        const std::size_t es = dtype_size(expr.outputs[o].dtype);
        std::memcpy(static_cast<std::byte*>(args.outputs[o]->data()) + first * es, t.slot(output_slots_[o]), t.len * es);
      }
    }
  });
}

}  // namespace kiln::cpu
