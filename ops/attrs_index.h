// Typed attributes of topk, the index op with a positional int: k in ints[0], the dim in dim,
// largest in flag (ops/op_list.def). The other index ops read named fields only (dim; sort:
// flag = descending; masked_fill: scalar; one_hot: dim = num_classes).
#pragma once
#include <cstdint>

#include "kiln/ops/ir.h"

namespace kiln {

struct TopkAttrs {
  std::int64_t k = 0;
  std::int64_t dim = 0;  // as given: may be negative (the shape rule wraps and checks it)
  bool largest = true;

  OpAttrs encode() const;
  // kiln::Error naming topk unless ints holds k alone (the shape rule checks its range).
  static TopkAttrs decode(OpKind kind, const OpAttrs& attrs);
  static TopkAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }
  bool operator==(const TopkAttrs&) const = default;
};

}  // namespace kiln
