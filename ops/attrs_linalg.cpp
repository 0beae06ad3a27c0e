#include "kiln/ops/attrs_linalg.h"

#include "kiln/ops/registry.h"

namespace kiln {

OpAttrs MatmulAttrs::encode() const {
  OpAttrs a;
  if (transpose_a || transpose_b) a.ints = {transpose_a ? 1 : 0, transpose_b ? 1 : 0};
  return a;
}

MatmulAttrs MatmulAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  const auto& f = attrs.ints;
  const auto flag = [](std::int64_t v) { return v == 0 || v == 1; };
  KILN_CHECK(f.empty() || (f.size() == 2 && flag(f[0]) && flag(f[1])), op_name(kind),
             "internal error: attrs must be no ints or [transpose_a, transpose_b], each 0 or 1");
  MatmulAttrs m;
  m.transpose_a = !f.empty() && f[0] != 0;
  m.transpose_b = !f.empty() && f[1] != 0;
  return m;
}

}  // namespace kiln
