#include "kiln/ops/attrs_layout.h"

#include <string>

#include "kiln/ops/registry.h"

namespace kiln {

namespace {

std::string list_str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

PadAttrs read_pairs(const char* name, const std::vector<std::int64_t>& ints, double value) {
  KILN_CHECK(ints.size() % 2 == 0, name, "pads " + list_str(ints) + " must come in (before, after) pairs");
  KILN_CHECK(ints.size() / 2 <= static_cast<std::size_t>(kMaxRank), name,
             "pads " + list_str(ints) + " cover more than " + std::to_string(kMaxRank) + " dims");
  PadAttrs p;
  p.count = static_cast<int>(ints.size() / 2);
  for (int i = 0; i < p.count; ++i) {
    p.before[static_cast<std::size_t>(i)] = ints[2 * static_cast<std::size_t>(i)];
    p.after[static_cast<std::size_t>(i)] = ints[2 * static_cast<std::size_t>(i) + 1];
  }
  p.value = value;
  return p;
}

}  // namespace

OpAttrs SliceAttrs::encode() const {
  OpAttrs a;
  a.ints.reserve(3 * static_cast<std::size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    const SliceRange& r = dims[static_cast<std::size_t>(d)];
    a.ints.insert(a.ints.end(), {r.start, r.stop, r.step});
  }
  return a;
}

SliceAttrs SliceAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  const auto& t = attrs.ints;
  KILN_CHECK(t.size() % 3 == 0 && t.size() / 3 <= static_cast<std::size_t>(kMaxRank), op_name(kind),
             "expected one (start, stop, step) triple per dim (at most " + std::to_string(kMaxRank) + "), got " +
                 list_str(t));
  SliceAttrs s;
  s.rank = static_cast<int>(t.size() / 3);
  for (std::size_t d = 0; d < static_cast<std::size_t>(s.rank); ++d) s.dims[d] = {t[3 * d], t[3 * d + 1], t[3 * d + 2]};
  return s;
}

std::vector<std::int64_t> PadAttrs::pairs() const {
  std::vector<std::int64_t> v;
  v.reserve(2 * static_cast<std::size_t>(count));
  for (std::size_t p = 0; p < static_cast<std::size_t>(count); ++p) v.insert(v.end(), {before[p], after[p]});
  return v;
}

PadAttrs PadAttrs::from_pairs(const std::vector<std::int64_t>& pairs, double value) {
  return read_pairs("pad", pairs, value);
}

OpAttrs PadAttrs::encode() const {
  OpAttrs a;
  a.ints = pairs();
  a.scalar = value;
  return a;
}

PadAttrs PadAttrs::decode(OpKind kind, const OpAttrs& attrs) { return read_pairs(op_name(kind), attrs.ints, attrs.scalar); }

}  // namespace kiln
