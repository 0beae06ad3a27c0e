// Shape rules of the index family, with torch's checks. Index tensors are i64. As in torch, a
// 0-d tensor counts as 1-D of size 1 when ranks are compared; index values are only known on the
// device, so an index out of range is the kernel's to report.
#include <cmath>

#include "kiln/ops/attrs_index.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

int torch_rank(const TensorIr& t) { return std::max(t.shape.rank(), 1); }
std::int64_t torch_size(const TensorIr& t, int d) { return t.shape.rank() == 0 ? 1 : t.shape[d]; }

// Like normalize_dim, with the input named in the message.
int checked_dim(const char* op, std::int64_t dim, const TensorIr& x) {
  const int r = torch_rank(x);
  KILN_CHECK(dim >= -r && dim < r, op,
             "dim " + std::to_string(dim) + " is out of range for input " + describe(x) +
                 " (valid: " + std::to_string(-r) + " to " + std::to_string(r - 1) + ")");
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

void check_index_dtype(const char* op, const TensorIr& index) {
  KILN_CHECK(index.dtype == DType::i64, op, "expected an i64 index, got " + describe(index));
}

void check_same_rank(const char* op, const TensorIr& x, const TensorIr& other, const char* role) {
  KILN_CHECK(torch_rank(x) == torch_rank(other), op,
             std::string(role) + " " + describe(other) + " and input " + describe(x) + " must have the same rank");
}

void gather_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 2);
  const TensorIr& x = op.inputs[0];
  const TensorIr& index = op.inputs[1];
  check_index_dtype("gather", index);
  check_same_rank("gather", x, index, "index");
  const int dim = checked_dim("gather", op.attrs.dim, x);
  if (index.numel() > 0) {
    for (int d = 0; d < torch_rank(x); ++d)
      KILN_CHECK(d == dim || torch_size(index, d) <= torch_size(x, d), "gather",
                 "index " + describe(index) + " is larger than input " + describe(x) + " in dim " + std::to_string(d) +
                     " (only dim " + std::to_string(dim) + " may be larger)");
  }
  out.push_back(TensorIr{0, index.shape, x.dtype, TensorStatus::NotInit});
}

void scatter_rule(const OpIr& op, TensorList& out) {
  const char* name = op_name(op.kind);
  check_arity(op, 3);
  const TensorIr& x = op.inputs[0];
  const TensorIr& index = op.inputs[1];
  const TensorIr& src = op.inputs[2];
  check_index_dtype(name, index);
  KILN_CHECK(src.dtype == x.dtype, name, "src " + describe(src) + " must have the dtype of input " + describe(x));
  check_same_rank(name, x, index, "index");
  check_same_rank(name, x, src, "src");
  const int dim = checked_dim(name, op.attrs.dim, x);
  if (index.numel() > 0) {
    for (int d = 0; d < torch_rank(x); ++d) {
      KILN_CHECK(d == dim || torch_size(index, d) <= torch_size(x, d), name,
                 "index " + describe(index) + " is larger than input " + describe(x) + " in dim " + std::to_string(d) +
                     " (only dim " + std::to_string(dim) + " may be larger)");
      KILN_CHECK(torch_size(index, d) <= torch_size(src, d), name,
                 "index " + describe(index) + " is larger than src " + describe(src) + " in dim " + std::to_string(d));
    }
  }
  out.push_back(TensorIr{0, x.shape, x.dtype, TensorStatus::NotInit});
}

void index_select_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 2);
  const TensorIr& x = op.inputs[0];
  const TensorIr& index = op.inputs[1];
  check_index_dtype("index_select", index);
  KILN_CHECK(index.shape.rank() <= 1, "index_select", "index " + describe(index) + " must be 1-D or 0-d");
  const int dim = checked_dim("index_select", op.attrs.dim, x);
  KILN_CHECK(index.numel() == 0 || torch_size(x, dim) > 0, "index_select",
             "dim " + std::to_string(dim) + " of input " + describe(x) + " is empty, so index " + describe(index) +
                 " cannot select from it");
  Shape shape = x.shape;
  if (x.shape.rank() == 0) {
    // torch gives a 0-d result here; only a single index has a defined meaning.
    KILN_CHECK(index.numel() == 1, "index_select",
               "a 0-d input " + describe(x) + " needs exactly one index, got " + describe(index));
  } else {
    shape[dim] = index.numel();
  }
  out.push_back(TensorIr{0, shape, x.dtype, TensorStatus::NotInit});
}

void masked_fill_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 2);
  const TensorIr& x = op.inputs[0];
  const TensorIr& mask = op.inputs[1];
  KILN_CHECK(mask.dtype == DType::bool_, "masked_fill", "expected a bool mask, got " + describe(mask));
  KILN_CHECK(broadcast_shapes("masked_fill", x.shape, mask.shape) == x.shape, "masked_fill",
             "mask " + describe(mask) + " does not broadcast to the shape of input " + describe(x));
  const double v = op.attrs.scalar;
  KILN_CHECK(x.dtype != DType::i64 || (std::isfinite(v) && v >= -0x1p63 && v < 0x1p63), "masked_fill",
             "value " + std::to_string(v) + " cannot be converted to i64 for input " + describe(x));
  out.push_back(TensorIr{0, x.shape, x.dtype, TensorStatus::NotInit});
}

void one_hot_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& indices = op.inputs[0];
  check_index_dtype("one_hot", indices);
  const std::int64_t classes = op.attrs.dim;
  KILN_CHECK(classes > 0, "one_hot",
             "num_classes must be positive, got " + std::to_string(classes) + " for indices " + describe(indices) +
                 " (it cannot be inferred: the index values are only known on the device)");
  KILN_CHECK(indices.shape.rank() < kMaxRank, "one_hot",
             "indices " + describe(indices) + " already have the largest rank, " + std::to_string(kMaxRank));
  Shape shape = indices.shape;
  shape.push_back(classes);
  out.push_back(TensorIr{0, shape, DType::i64, TensorStatus::NotInit});
}

void sort_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& x = op.inputs[0];
  checked_dim("sort", op.attrs.dim, x);
  out.push_back(TensorIr{0, x.shape, x.dtype, TensorStatus::NotInit});
  out.push_back(TensorIr{0, x.shape, DType::i64, TensorStatus::NotInit});
}

void topk_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& x = op.inputs[0];
  KILN_CHECK(is_floating(x.dtype) || x.dtype == DType::i64, "topk",
             "expected a float or i64 input, got " + describe(x));
  const TopkAttrs t = TopkAttrs::decode(op);  // ops/attrs_index.h
  const int dim = checked_dim("topk", t.dim, x);
  const std::int64_t k = t.k;
  const std::int64_t size = torch_size(x, dim);
  KILN_CHECK(k >= 0 && k <= size, "topk",
             "k = " + std::to_string(k) + " is out of range for dim " + std::to_string(dim) + " of size " +
                 std::to_string(size) + " of input " + describe(x));
  Shape shape = x.shape;
  if (shape.rank() > 0) shape[dim] = k;  // torch keeps a 0-d input 0-d
  out.push_back(TensorIr{0, shape, x.dtype, TensorStatus::NotInit});
  out.push_back(TensorIr{0, shape, DType::i64, TensorStatus::NotInit});
}

}  // namespace

void register_index_ops(OpRegistry& r) {
  r.at(OpKind::gather).shape_rule = gather_rule;
  for (OpKind k : {OpKind::scatter, OpKind::scatter_add}) {
    r.at(k).shape_rule = scatter_rule;
    r.at(k).inplace_ok = true;  // the kernel skips copying x when the output is x's buffer
  }
  r.at(OpKind::index_select).shape_rule = index_select_rule;
  r.at(OpKind::masked_fill).shape_rule = masked_fill_rule;
  r.at(OpKind::masked_fill).inplace_ok = true;
  r.at(OpKind::one_hot).shape_rule = one_hot_rule;
  // sort and topk read a whole slice into scratch before writing it back.
  r.at(OpKind::sort).shape_rule = sort_rule;
  r.at(OpKind::sort).inplace_ok = true;
  r.at(OpKind::topk).shape_rule = topk_rule;
  r.at(OpKind::topk).inplace_ok = true;
}

}  // namespace kiln
