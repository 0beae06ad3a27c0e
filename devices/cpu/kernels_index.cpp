#include "devices/cpu/cpu_kernels.h"

namespace kiln::cpu {
void register_index_kernels(KernelTable& t) {}
}  // namespace kiln::cpu
