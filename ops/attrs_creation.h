// Typed attributes of the creation family. Every creation op carries its output's shape in ints
// and its dtype in dtype (CreationOutput); what it fills the output with sits in scalar, scalar2
// and seed with a meaning per op, which these structs name. The engine encodes; the shape rule
// and both devices' kernels decode. decode checks the op and the shape (no negative size) and
// throws a kiln::Error naming the op.
#pragma once
#include <cstdint>

#include "kiln/ops/ir.h"

namespace kiln {

// ints = shape, dtype: the output of every creation op (eye has nothing else).
struct CreationOutput {
  Shape shape;
  DType dtype = DType::f32;
  OpAttrs encode() const;  // eye's whole attrs
  static CreationOutput decode(OpKind kind, const OpAttrs& attrs);
  bool operator==(const CreationOutput&) const = default;
};

struct FullAttrs {  // full: scalar = value
  CreationOutput out;
  double value = 0.0;
  OpAttrs encode() const;
  static FullAttrs decode(OpKind kind, const OpAttrs& attrs);
  bool operator==(const FullAttrs&) const = default;
};

struct ArangeAttrs {  // arange: scalar = start, scalar2 = step
  CreationOutput out;
  double start = 0.0, step = 1.0;
  OpAttrs encode() const;
  static ArangeAttrs decode(OpKind kind, const OpAttrs& attrs);
  bool operator==(const ArangeAttrs&) const = default;
};

struct LinspaceAttrs {  // linspace: scalar = start, scalar2 = end
  CreationOutput out;
  double start = 0.0, end = 0.0;
  OpAttrs encode() const;
  static LinspaceAttrs decode(OpKind kind, const OpAttrs& attrs);
  bool operator==(const LinspaceAttrs&) const = default;
};

// The random ops: values are a function of the seed and the element's index only, so devices
// agree.
struct UniformAttrs {  // rand_uniform: scalar = low, scalar2 = high, seed
  CreationOutput out;
  double low = 0.0, high = 1.0;
  std::uint64_t seed = 0;
  OpAttrs encode() const;
  static UniformAttrs decode(OpKind kind, const OpAttrs& attrs);
  bool operator==(const UniformAttrs&) const = default;
};

struct NormalAttrs {  // rand_normal: scalar = mean, scalar2 = std, seed
  CreationOutput out;
  double mean = 0.0, std = 1.0;
  std::uint64_t seed = 0;
  OpAttrs encode() const;
  static NormalAttrs decode(OpKind kind, const OpAttrs& attrs);
  bool operator==(const NormalAttrs&) const = default;
};

struct BernoulliAttrs {  // rand_bernoulli: scalar = p, seed
  CreationOutput out;
  double p = 0.5;
  std::uint64_t seed = 0;
  OpAttrs encode() const;
  static BernoulliAttrs decode(OpKind kind, const OpAttrs& attrs);
  bool operator==(const BernoulliAttrs&) const = default;
};

}  // namespace kiln
