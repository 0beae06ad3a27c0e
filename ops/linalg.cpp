// Shape rule of matmul, with torch.matmul's rules: a 1-D operand is promoted to a matrix (a
// leading 1 for the left, a trailing 1 for the right) and the added dim removed from the result;
// the dims before the last two are batch dims and broadcast. Operands are f32, or both f16 or
// both bf16 (the result has their dtype, as in torch); the CPU device is f32 only. An operand may
// enter transposed (attrs), read in place by devices that can (devices/capabilities.h).
#include "kiln/ops/attrs_linalg.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// An operand as the product sees it: with its last two dims swapped when it enters transposed.
TensorIr as_entered(const TensorIr& t, bool transposed) {
  TensorIr e = t;
  if (transposed) std::swap(e.shape[e.shape.rank() - 1], e.shape[e.shape.rank() - 2]);
  return e;
}

void matmul_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 2);
  const MatmulAttrs flags = MatmulAttrs::decode(op);
  const bool ta = flags.transpose_a, tb = flags.transpose_b;
  KILN_CHECK((!ta || op.inputs[0].shape.rank() >= 2) && (!tb || op.inputs[1].shape.rank() >= 2), "matmul",
             "a transposed operand needs 2 or more dims, got " + describe(op.inputs[0]) + " and " + describe(op.inputs[1]));
  const TensorIr a = as_entered(op.inputs[0], ta);
  const TensorIr b = as_entered(op.inputs[1], tb);
  // The operands for a message, built only when a check fails: the rule runs for every matmul
  // submitted, on the caller's thread.
  auto both = [&] { return describe(a) + (ta ? " (transposed)" : "") + " and " + describe(b) + (tb ? " (transposed)" : ""); };
  const bool floating = a.dtype == DType::f32 || a.dtype == DType::f16 || a.dtype == DType::bf16;
  KILN_CHECK(floating && a.dtype == b.dtype, "matmul",
             "expected f32 operands (or two f16 or two bf16 operands, on devices that have them), got " + both());
  KILN_CHECK(a.shape.rank() >= 1 && b.shape.rank() >= 1, "matmul", "both operands need at least 1 dim, got " + both());
  const int ra = a.shape.rank(), rb = b.shape.rank();
  const std::int64_t k_a = a.shape[ra - 1];
  const std::int64_t k_b = rb == 1 ? b.shape[0] : b.shape[rb - 2];
  KILN_CHECK(k_a == k_b, "matmul",
             "inner dims do not match: " + both() + " (" + std::to_string(k_a) + " vs " + std::to_string(k_b) + ")");

  const int batch_a = std::max(ra - 2, 0), batch_b = std::max(rb - 2, 0);
  const int batch = std::max(batch_a, batch_b);
  Shape shape;
  for (int i = 0; i < batch; ++i) {
    const int ia = batch_a - batch + i, ib = batch_b - batch + i;
    const std::int64_t da = ia >= 0 ? a.shape[ia] : 1, db = ib >= 0 ? b.shape[ib] : 1;
    KILN_CHECK(
        da == db || da == 1 || db == 1, "matmul",
        "batch dims of " + both() + " cannot be broadcast (" + std::to_string(da) + " vs " + std::to_string(db) + ")");
    shape.push_back(da == 1 ? db : da);
  }
  if (ra >= 2) shape.push_back(a.shape[ra - 2]);
  if (rb >= 2) shape.push_back(b.shape[rb - 1]);
  out.push_back(TensorIr{0, shape, a.dtype, TensorStatus::NotInit});
}

}  // namespace

void register_linalg_ops(OpRegistry& r) { r.at(OpKind::matmul).shape_rule = matmul_rule; }

}  // namespace kiln
