#include "kiln/ops/attrs_index.h"

#include "kiln/ops/registry.h"

namespace kiln {

OpAttrs TopkAttrs::encode() const {
  OpAttrs a;
  a.ints = {k};
  a.dim = dim;
  a.flag = largest;
  return a;
}

TopkAttrs TopkAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  KILN_CHECK(attrs.ints.size() == 1, op_name(kind), "expected k in ints[0]");
  return TopkAttrs{.k = attrs.ints[0], .dim = attrs.dim, .largest = attrs.flag};
}

}  // namespace kiln
