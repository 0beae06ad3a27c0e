// Shape rules of the reduce family: reductions over dims, argmax/argmin, cumsum and softmax.
// The API normalizes dims before submitting (ops/reduce_rules.h); the rules here re-check them
// so that a message built elsewhere (autograd, fusion) cannot hand a kernel a bad dim list.
#include <algorithm>

#include "kiln/ops/reduce_rules.h"
#include "kiln/ops/registry.h"

namespace kiln {

int normalize_reduce_dim(const char* op, std::int64_t dim, const TensorIr& in) {
  const int rank = in.shape.rank();
  const std::int64_t r = std::max(rank, 1);
  KILN_CHECK(dim >= -r && dim < r, op,
             "dim " + std::to_string(dim) + " is out of range for input " + describe(in) + " (expected a dim in [" +
                 std::to_string(-r) + ", " + std::to_string(r - 1) + "])");
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

std::vector<std::int64_t> normalize_reduce_dims(const char* op, const std::vector<std::int64_t>& dims,
                                                const TensorIr& in) {
  const int rank = in.shape.rank();
  std::vector<std::int64_t> out;
  if (dims.empty()) {
    for (int d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  std::vector<bool> seen(static_cast<std::size_t>(std::max(rank, 1)), false);
  for (std::int64_t d : dims) {
    const int n = normalize_reduce_dim(op, d, in);
    KILN_CHECK(!seen[static_cast<std::size_t>(n)], op,
               "dim " + std::to_string(n) + " appears more than once in the list of dims for input " + describe(in));
    seen[static_cast<std::size_t>(n)] = true;
    if (rank > 0) out.push_back(n);  // a 0-d tensor has no dim to reduce: {0}/{-1} mean "itself"
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reduced_shape(const Shape& in, const std::vector<std::int64_t>& dims, bool keepdim) {
  Shape out;
  std::size_t k = 0;
  for (int d = 0; d < in.rank(); ++d) {
    const bool reduced = k < dims.size() && dims[k] == d;
    if (reduced) ++k;
    if (!reduced)
      out.push_back(in[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

DType reduce_output_dtype(OpKind kind, const TensorIr& in) {
  const char* name = op_name(kind);
  const DType t = in.dtype;
  // f16 and bf16 (on the devices that have them) accumulate in f32 and give their own dtype, as
  // PyTorch's CUDA kernels do.
  const bool half = is_half(t);
  switch (kind) {
    case OpKind::sum:
    case OpKind::prod:
    case OpKind::cumsum: return is_floating(t) ? t : DType::i64;
    case OpKind::max:
    case OpKind::min: return t;
    case OpKind::argmax:
    case OpKind::argmin:
      KILN_CHECK(t != DType::bool_, name, "input " + describe(in) + ": not defined for bool input (torch neither)");
      return DType::i64;
    case OpKind::any:
    case OpKind::all: return DType::bool_;
    case OpKind::logsumexp: return half ? t : DType::f32;  // integer inputs are promoted, like torch
    case OpKind::mean:
    case OpKind::var:
    case OpKind::std:
    case OpKind::softmax:
    case OpKind::log_softmax:
      KILN_CHECK(is_floating(t), name,
                 "input " + describe(in) + ": dtype " + dtype_name(t) +
                     " is not supported, the input must be floating point (f32); cast it first");
      return t;
    default: break;
  }
  throw Error(name, "not a reduce-family op");
}

namespace {

// Reductions whose result has no identity: an empty reduced extent has no answer.
bool needs_nonempty_extent(OpKind k) {
  return k == OpKind::max || k == OpKind::min || k == OpKind::argmax || k == OpKind::argmin;
}

void check_extent(const OpIr& op, int dim) {
  const TensorIr& in = op.inputs[0];
  if (!needs_nonempty_extent(op.kind) || in.shape.rank() == 0) return;
  KILN_CHECK(in.shape[dim] != 0, op_name(op.kind),
             "cannot reduce over dim " + std::to_string(dim) + " of size 0 of input " + describe(in) +
                 " (the result has no identity)");
}

void dims_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& in = op.inputs[0];
  const char* name = op_name(op.kind);
  const DType dtype = reduce_output_dtype(op.kind, in);
  const std::vector<std::int64_t> dims = normalize_reduce_dims(name, op.attrs.ints, in);
  KILN_CHECK(op.attrs.ints.empty() || dims == op.attrs.ints, name,
             "internal error: the message's dims must be empty (all) or sorted and non-negative");
  for (std::int64_t d : dims) check_extent(op, static_cast<int>(d));
  out.push_back(TensorIr{0, reduced_shape(in.shape, dims, op.attrs.keepdim), dtype, TensorStatus::NotInit});
}

// Checks that the message's single dim is already normalized.
int single_dim(const OpIr& op) {
  const int rank = op.inputs[0].shape.rank();
  const std::int64_t d = op.attrs.dim;
  KILN_CHECK(d >= 0 && d < std::max(rank, 1), op_name(op.kind),
             "internal error: dim " + std::to_string(d) + " is not normalized for rank " + std::to_string(rank));
  return static_cast<int>(d);
}

void arg_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& in = op.inputs[0];
  const DType dtype = reduce_output_dtype(op.kind, in);
  if (!op.attrs.flag) {
    KILN_CHECK(in.numel() > 0, op_name(op.kind),
               "input " + describe(in) + " is empty: the flattened reduction has no answer (give a dim)");
    out.push_back(TensorIr{0, Shape{}, dtype, TensorStatus::NotInit});
    return;
  }
  const int dim = single_dim(op);
  check_extent(op, dim);
  std::vector<std::int64_t> dims;
  if (in.shape.rank() > 0) dims.push_back(dim);
  out.push_back(TensorIr{0, reduced_shape(in.shape, dims, op.attrs.keepdim), dtype, TensorStatus::NotInit});
}

void along_dim_rule(const OpIr& op, TensorList& out) {
  check_arity(op, 1);
  const TensorIr& in = op.inputs[0];
  const DType dtype = reduce_output_dtype(op.kind, in);
  single_dim(op);
  out.push_back(TensorIr{0, in.shape, dtype, TensorStatus::NotInit});
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  for (OpKind k : {OpKind::sum, OpKind::mean, OpKind::prod, OpKind::max, OpKind::min, OpKind::var, OpKind::std,
                   OpKind::any, OpKind::all, OpKind::logsumexp})
    r.at(k).shape_rule = dims_rule;
  r.at(OpKind::argmax).shape_rule = arg_rule;
  r.at(OpKind::argmin).shape_rule = arg_rule;
  // These kernels read element k of the input before writing element k of the output.
  for (OpKind k : {OpKind::cumsum, OpKind::softmax, OpKind::log_softmax}) {
    r.at(k).shape_rule = along_dim_rule;
    r.at(k).inplace_ok = true;
  }
}

}  // namespace kiln
