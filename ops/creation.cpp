// Shape rules of the creation family: the output shape comes from attrs.ints, the dtype from
// attrs.dtype (any: f16 and bf16 exist on some Vulkan devices only, and the submission rejects
// them on the others, naming the device).
#include "kiln/ops/registry.h"

namespace kiln {

namespace {
void creation_rule(const OpIr& op, TensorList& out) {
  Shape shape;
  for (std::int64_t d : op.attrs.ints) {
    KILN_CHECK(d >= 0, op_name(op.kind), "negative dimension " + std::to_string(d) + " in the requested shape");
    shape.push_back(d);
  }
  out.push_back(TensorIr{0, shape, op.attrs.dtype, TensorStatus::NotInit});
}
}  // namespace

void register_creation_ops(OpRegistry& r) {
  for (OpKind k : {OpKind::full, OpKind::arange, OpKind::linspace, OpKind::eye, OpKind::rand_uniform,
                   OpKind::rand_normal, OpKind::rand_bernoulli})
    r.at(k).shape_rule = creation_rule;
}

}  // namespace kiln
