// CPU kernels of the index family: registration (the kernels are in index_*.cpp).
#include "kiln/devices/cpu/index_kernels.h"

namespace kiln::cpu {

void register_index_kernels(KernelTable& t) {
  // The table every device shares (devices/kernel_tables.def).
#define KILN_INDEX_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::cpu
