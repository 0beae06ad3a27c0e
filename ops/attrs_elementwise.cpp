#include "kiln/ops/attrs_elementwise.h"

#include "kiln/ops/registry.h"

namespace kiln {

OpAttrs ClampAttrs::encode() const {
  OpAttrs a;
  a.ints = {has_min ? 1 : 0, has_max ? 1 : 0};
  a.scalar = has_min ? min : 0.0;
  a.scalar2 = has_max ? max : 0.0;
  return a;
}

ClampAttrs ClampAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  const auto& f = attrs.ints;
  const auto flag = [](std::int64_t v) { return v == 0 || v == 1; };
  KILN_CHECK(f.size() == 2 && flag(f[0]) && flag(f[1]), op_name(kind),
             "expected ints = [has_min, has_max], each 0 or 1, got " + std::to_string(f.size()) + " ints");
  ClampAttrs c;
  c.has_min = f[0] != 0;
  c.has_max = f[1] != 0;
  c.min = c.has_min ? attrs.scalar : 0.0;
  c.max = c.has_max ? attrs.scalar2 : 0.0;
  return c;
}

}  // namespace kiln
