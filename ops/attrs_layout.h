// Typed attributes of the layout ops whose ints are positional: slice's (start, stop, step)
// triples and pad's (before, after) pairs. The engine encodes; the shape rules, both devices'
// kernels (through devices/shape_plans.h for slice) and autograd's rules decode. The other
// layout ops carry one plain list (reshape and expand: the shape; permute: the order; flip: the
// dims; repeat: the repeats) or a named field (cat: dim; tril, triu: dim = the diagonal).
// Decoding allocates nothing and checks the form; the shape rules check the values against the
// input, naming it.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "kiln/ops/ir.h"

namespace kiln {

// slice: ints = (start, stop, step) per dim of the input, every dim listed (the engine gives the
// untouched ones (0, size, 1)), bounds canonical: 0 <= start <= stop <= size, step > 0.
struct SliceRange {
  std::int64_t start = 0, stop = 0, step = 1;
  bool operator==(const SliceRange&) const = default;
};

struct SliceAttrs {
  int rank = 0;
  std::array<SliceRange, kMaxRank> dims{};

  OpAttrs encode() const;
  // kiln::Error naming the op unless the ints are whole triples, at most kMaxRank of them.
  static SliceAttrs decode(OpKind kind, const OpAttrs& attrs);
  static SliceAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }
  bool operator==(const SliceAttrs&) const = default;
};

// pad: ints = (before, after) per dim from the last, as torch's F.pad lists them (fewer pairs
// than dims leave the leading dims alone; negative amounts crop); scalar = the fill value.
struct PadAttrs {
  int count = 0;  // pairs: the last `count` dims are padded
  std::array<std::int64_t, kMaxRank> before{}, after{};  // [p]: dim rank - 1 - p
  double value = 0.0;

  // The pads of dim d of a tensor of rank `rank` (0 for the dims no pair covers).
  std::int64_t before_dim(int d, int rank) const { return rank - 1 - d < count ? before[rank - 1 - d] : 0; }
  std::int64_t after_dim(int d, int rank) const { return rank - 1 - d < count ? after[rank - 1 - d] : 0; }
  // Torch's flat list (before, after, before, after, ...), last dim first.
  std::vector<std::int64_t> pairs() const;
  // From torch's flat list; kiln::Error naming pad unless whole pairs, at most kMaxRank.
  static PadAttrs from_pairs(const std::vector<std::int64_t>& pairs, double value);

  OpAttrs encode() const;
  static PadAttrs decode(OpKind kind, const OpAttrs& attrs);
  static PadAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }
  bool operator==(const PadAttrs&) const = default;
};

}  // namespace kiln
