// CPU kernels of the index family: registration and the helpers the index_*.cpp files share.
#include "devices/cpu/index_kernels.h"

namespace kiln::cpu {

namespace index {

Dims dims_of(const Shape& s) {
  Dims d;
  if (s.rank() == 0) return d;
  d.rank = s.rank();
  std::int64_t acc = 1;
  for (int i = d.rank - 1; i >= 0; --i) {
    d.size[i] = s[i];
    d.stride[i] = acc;
    acc *= s[i];
  }
  return d;
}

int op_dim(const OpIr& op, int rank) {
  const auto dim = static_cast<int>(op.attrs.dim);
  return dim < 0 ? dim + rank : dim;
}

void throw_out_of_range(const OpIr& op, std::int64_t value, int dim, std::int64_t size) {
  std::string shapes;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) shapes += (i ? ", " : "") + describe(op.inputs[i]);
  throw Error(op_name(op.kind), "index " + std::to_string(value) + " is out of range for dim " + std::to_string(dim) +
                                    " of size " + std::to_string(size) + " (inputs " + shapes + ")");
}

}  // namespace index

void register_index_kernels(KernelTable& t) {
  t.set(OpKind::gather, index::gather_kernel);
  t.set(OpKind::scatter, index::scatter_kernel);
  t.set(OpKind::scatter_add, index::scatter_add_kernel);
  t.set(OpKind::index_select, index::index_select_kernel);
  t.set(OpKind::masked_fill, index::masked_fill_kernel);
  t.set(OpKind::one_hot, index::one_hot_kernel);
  t.set(OpKind::sort, index::sort_kernel);
  t.set(OpKind::topk, index::topk_kernel);
}

}  // namespace kiln::cpu
