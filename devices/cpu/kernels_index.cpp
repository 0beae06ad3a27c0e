// CPU kernels of the index family: registration (the kernels are in index_*.cpp).
#include "kiln/devices/cpu/index_kernels.h"

namespace kiln::cpu {

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
