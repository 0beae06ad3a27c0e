// Shape rules of the layout family (slice's and pad's attrs: ops/attrs_layout.h). The API functions (engine/layout.cpp) canonicalize their
// arguments (wrap negative dims, resolve -1, clamp slice bounds) before submitting, so these
// rules check the canonical form strictly: a message that reaches a kernel is always in range.
// Every dtype moves: f16 and bf16 exist on some Vulkan devices only, and the submission rejects
// them on the others (engine/submit.cpp), naming the device.
#include <algorithm>
#include <cmath>
#include <string>

#include "kiln/ops/attrs_layout.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

std::string ints_str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

const TensorIr& single_input(const OpIr& op) {
  check_arity(op, 1);
  return op.inputs[0];
}

void emit(TensorList& out, const Shape& shape, DType dtype) {
  out.push_back(TensorIr{0, shape, dtype, TensorStatus::NotInit});
}

void reshape_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  Shape shape;
  for (std::int64_t d : op.attrs.ints) {
    KILN_CHECK(d >= 0, "reshape",
               "shape " + ints_str(op.attrs.ints) + " has a negative size (input " + describe(x) + ")");
    shape.push_back(d);
  }
  KILN_CHECK(shape.numel() == x.numel(), "reshape",
             "shape " + shape.str() + " is invalid for input " + describe(x) + " (" + std::to_string(x.numel()) +
                 " elements)");
  emit(out, shape, x.dtype);
}

void permute_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  const auto& perm = op.attrs.ints;
  const int rank = x.shape.rank();
  KILN_CHECK(static_cast<int>(perm.size()) == rank, "permute",
             "dims " + ints_str(perm) + " must list each dim of " + describe(x) + " once");
  bool seen[kMaxRank] = {};
  Shape shape;
  for (std::int64_t d : perm) {
    KILN_CHECK(d >= 0 && d < rank && !seen[d], "permute",
               "dims " + ints_str(perm) + " must list each dim of " + describe(x) + " once");
    seen[d] = true;
    shape.push_back(x.shape[static_cast<int>(d)]);
  }
  emit(out, shape, x.dtype);
}

void expand_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  const auto& target = op.attrs.ints;
  const int rank = x.shape.rank(), lead = static_cast<int>(target.size()) - rank;
  KILN_CHECK(lead >= 0, "expand",
             "the target shape " + ints_str(target) + " has fewer dims than the input " + describe(x));
  Shape shape;
  for (int i = 0; i < static_cast<int>(target.size()); ++i) {
    const std::int64_t want = target[i];
    KILN_CHECK(want >= 0, "expand", "the target shape " + ints_str(target) + " has a negative size");
    if (i >= lead) {
      const std::int64_t have = x.shape[i - lead];
      KILN_CHECK(have == want || have == 1, "expand",
                 "input " + describe(x) + " cannot be expanded to " + ints_str(target) + ": dim " +
                     std::to_string(i - lead) + " has size " + std::to_string(have) + ", which is not 1");
    }
    shape.push_back(want);
  }
  emit(out, shape, x.dtype);
}

void slice_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  const SliceAttrs t = SliceAttrs::decode(op);
  const int rank = x.shape.rank();
  KILN_CHECK(t.rank == rank, "slice",
             "expected one (start, stop, step) triple per dim of " + describe(x) + ", got " + ints_str(op.attrs.ints));
  Shape shape;
  for (int d = 0; d < rank; ++d) {
    const auto [start, stop, step] = t.dims[static_cast<std::size_t>(d)];
    KILN_CHECK(step > 0, "slice",
               "step must be positive, got " + std::to_string(step) + " (input " + describe(x) + ")");
    KILN_CHECK(0 <= start && start <= stop && stop <= x.shape[d], "slice",
               "range [" + std::to_string(start) + ", " + std::to_string(stop) + ") is outside dim " +
                   std::to_string(d) + " of " + describe(x));
    shape.push_back((stop - start + step - 1) / step);
  }
  emit(out, shape, x.dtype);
}

// torch keeps accepting 1-D empty tensors ([0]) in cat whatever the other shapes: they are skipped.
bool skipped_in_cat(const TensorIr& t) { return t.shape.rank() == 1 && t.shape[0] == 0; }

void cat_rule(const OpIr& op, TensorList& out) {
  KILN_CHECK(!op.inputs.empty(), "cat", "expected at least one tensor");
  const TensorIr* first = nullptr;
  for (const TensorIr& t : op.inputs) {
    KILN_CHECK(t.dtype == op.inputs[0].dtype, "cat",
               "all tensors must have the same dtype: " + describe(op.inputs[0]) + " and " + describe(t));
    if (!first && !skipped_in_cat(t)) first = &t;
  }
  if (!first) {
    emit(out, Shape{0}, op.inputs[0].dtype);
    return;
  }
  const int rank = first->shape.rank();
  KILN_CHECK(rank > 0, "cat", "zero-dimensional tensor " + describe(*first) + " cannot be concatenated");
  const int dim = normalize_dim("cat", op.attrs.dim, rank);
  Shape shape = first->shape;
  shape[dim] = 0;
  for (const TensorIr& t : op.inputs) {
    if (skipped_in_cat(t)) continue;
    bool same = t.shape.rank() == rank;
    for (int d = 0; same && d < rank; ++d) same = d == dim || t.shape[d] == first->shape[d];
    KILN_CHECK(
        same, "cat",
        "shapes " + describe(*first) + " and " + describe(t) + " must match except in dim " + std::to_string(dim));
    shape[dim] += t.shape[dim];
  }
  emit(out, shape, first->dtype);
}

void flip_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  bool seen[kMaxRank] = {};
  for (std::int64_t d : op.attrs.ints) {
    KILN_CHECK(d >= 0 && d < std::max(x.shape.rank(), 1), "flip",
               "dims " + ints_str(op.attrs.ints) + " are out of range for " + describe(x));
    KILN_CHECK(!seen[d], "flip", "dim " + std::to_string(d) + " appears more than once in " + ints_str(op.attrs.ints));
    seen[d] = true;
  }
  emit(out, x.shape, x.dtype);
}

void repeat_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  const auto& reps = op.attrs.ints;
  const int rank = x.shape.rank(), lead = static_cast<int>(reps.size()) - rank;
  KILN_CHECK(lead >= 0, "repeat",
             "repeats " + ints_str(reps) + " must have at least as many entries as " + describe(x) + " has dims");
  Shape shape;
  for (int i = 0; i < static_cast<int>(reps.size()); ++i) {
    KILN_CHECK(reps[i] >= 0, "repeat", "repeats " + ints_str(reps) + " must not be negative");
    shape.push_back(reps[i] * (i >= lead ? x.shape[i - lead] : 1));
  }
  emit(out, shape, x.dtype);
}

void pad_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  const auto& pads = op.attrs.ints;  // for messages
  const PadAttrs p = PadAttrs::decode(op);
  const int rank = x.shape.rank();
  KILN_CHECK(p.count <= rank, "pad", "pads " + ints_str(pads) + " cover more dims than " + describe(x) + " has");
  const double v = p.value;
  KILN_CHECK(x.dtype != DType::i64 || (std::isfinite(v) && std::abs(v) < 9.2e18), "pad",
             "value " + std::to_string(v) + " does not fit the dtype of " + describe(x));
  Shape shape = x.shape;
  for (int d = rank - 1; d >= rank - p.count; --d) {  // last dim first, as the pairs are listed
    shape[d] = x.shape[d] + p.before_dim(d, rank) + p.after_dim(d, rank);
    KILN_CHECK(shape[d] >= 0, "pad",
               "pads " + ints_str(pads) + " make dim " + std::to_string(d) + " of " + describe(x) + " negative");
  }
  emit(out, shape, x.dtype);
}

void triangle_rule(const OpIr& op, TensorList& out) {
  const TensorIr& x = single_input(op);
  KILN_CHECK(x.shape.rank() >= 2, op_name(op.kind), "input " + describe(x) + " must have at least 2 dims");
  emit(out, x.shape, x.dtype);
}

}  // namespace

void register_layout_ops(OpRegistry& r) {
  r.at(OpKind::reshape).shape_rule = reshape_rule;
  r.at(OpKind::reshape).view = true;
  r.at(OpKind::permute).shape_rule = permute_rule;
  r.at(OpKind::expand).shape_rule = expand_rule;
  r.at(OpKind::slice).shape_rule = slice_rule;
  r.at(OpKind::cat).shape_rule = cat_rule;
  r.at(OpKind::flip).shape_rule = flip_rule;
  r.at(OpKind::repeat).shape_rule = repeat_rule;
  r.at(OpKind::pad).shape_rule = pad_rule;
  // A masked copy reads element k before it writes element k: safe when the output aliases the
  // input. Gathers (permute, flip, ...) read other elements than they write, so they never are.
  r.at(OpKind::tril).shape_rule = triangle_rule;
  r.at(OpKind::tril).inplace_ok = true;
  r.at(OpKind::triu).shape_rule = triangle_rule;
  r.at(OpKind::triu).inplace_ok = true;
}

}  // namespace kiln
