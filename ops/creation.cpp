// Shape rules of the creation family: the output shape and dtype come from the op's
// CreationOutput (ops/attrs_creation.h) (any: f16 and bf16 exist on some Vulkan devices only, and the submission rejects
// them on the others, naming the device).
#include "kiln/ops/attrs_creation.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {
void creation_rule(const OpIr& op, TensorList& out) {
  const CreationOutput o = CreationOutput::decode(op.kind, op.attrs);
  out.push_back(TensorIr{0, o.shape, o.dtype, TensorStatus::NotInit});
}
}  // namespace

void register_creation_ops(OpRegistry& r) {
  for (OpKind k : {OpKind::full, OpKind::arange, OpKind::linspace, OpKind::eye, OpKind::rand_uniform,
                   OpKind::rand_normal, OpKind::rand_bernoulli})
    r.at(k).shape_rule = creation_rule;
}

}  // namespace kiln
