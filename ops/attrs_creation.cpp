#include "kiln/ops/attrs_creation.h"

#include <string>

#include "kiln/ops/registry.h"

namespace kiln {

namespace {

OpAttrs output_attrs(const CreationOutput& out) {
  OpAttrs a;
  a.ints.assign(out.shape.begin(), out.shape.end());
  a.dtype = out.dtype;
  return a;
}

void expect_kind(OpKind kind, OpKind want) {
  KILN_CHECK(kind == want, op_name(kind), std::string("internal error: decoded as ") + op_name(want) + "'s attrs");
}

}  // namespace

OpAttrs CreationOutput::encode() const { return output_attrs(*this); }

CreationOutput CreationOutput::decode(OpKind kind, const OpAttrs& attrs) {
  KILN_CHECK(attrs.ints.size() <= static_cast<std::size_t>(kMaxRank), op_name(kind),
             "the requested shape has " + std::to_string(attrs.ints.size()) + " dims, more than " +
                 std::to_string(kMaxRank));
  CreationOutput out;
  for (std::int64_t d : attrs.ints) {
    KILN_CHECK(d >= 0, op_name(kind), "negative dimension " + std::to_string(d) + " in the requested shape");
    out.shape.push_back(d);
  }
  out.dtype = attrs.dtype;
  return out;
}

OpAttrs FullAttrs::encode() const {
  OpAttrs a = output_attrs(out);
  a.scalar = value;
  return a;
}
FullAttrs FullAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  expect_kind(kind, OpKind::full);
  return FullAttrs{CreationOutput::decode(kind, attrs), attrs.scalar};
}

OpAttrs ArangeAttrs::encode() const {
  OpAttrs a = output_attrs(out);
  a.scalar = start;
  a.scalar2 = step;
  return a;
}
ArangeAttrs ArangeAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  expect_kind(kind, OpKind::arange);
  return ArangeAttrs{CreationOutput::decode(kind, attrs), attrs.scalar, attrs.scalar2};
}

OpAttrs LinspaceAttrs::encode() const {
  OpAttrs a = output_attrs(out);
  a.scalar = start;
  a.scalar2 = end;
  return a;
}
LinspaceAttrs LinspaceAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  expect_kind(kind, OpKind::linspace);
  return LinspaceAttrs{CreationOutput::decode(kind, attrs), attrs.scalar, attrs.scalar2};
}

OpAttrs UniformAttrs::encode() const {
  OpAttrs a = output_attrs(out);
  a.scalar = low;
  a.scalar2 = high;
  a.seed = seed;
  return a;
}
UniformAttrs UniformAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  expect_kind(kind, OpKind::rand_uniform);
  return UniformAttrs{CreationOutput::decode(kind, attrs), attrs.scalar, attrs.scalar2, attrs.seed};
}

OpAttrs NormalAttrs::encode() const {
  OpAttrs a = output_attrs(out);
  a.scalar = mean;
  a.scalar2 = std;
  a.seed = seed;
  return a;
}
NormalAttrs NormalAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  expect_kind(kind, OpKind::rand_normal);
  return NormalAttrs{CreationOutput::decode(kind, attrs), attrs.scalar, attrs.scalar2, attrs.seed};
}

OpAttrs BernoulliAttrs::encode() const {
  OpAttrs a = output_attrs(out);
  a.scalar = p;
  a.seed = seed;
  return a;
}
BernoulliAttrs BernoulliAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  expect_kind(kind, OpKind::rand_bernoulli);
  return BernoulliAttrs{CreationOutput::decode(kind, attrs), attrs.scalar, attrs.seed};
}

}  // namespace kiln
