// The cache-blocked transpose path of the strided copy (layout_strided_copy.cpp): a box with a
// dim that is contiguous in the source but not innermost, and an innermost dim that is
// contiguous in the destination. Walking it element by element reads one cache line per element;
// square tiles with 8 x 8 register transposes read and write whole vectors instead.
#pragma once
#include "kiln/devices/cpu/layout_strided_copy.h"

namespace kiln::cpu::detail {

// If `c` (already coalesced) is such a box, copies it and returns true.
bool try_copy_transposed(const StridedCopy& c);

}  // namespace kiln::cpu::detail
