// Internal to the CPU index kernels (devices/cpu/index_*.cpp): their entry points and the few
// helpers they share — torch's view of ranks, dtype dispatch and the index range check whose
// failure reaches the output's future.
#pragma once
#include <cstdint>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/shape_plans.h"

namespace kiln::cpu::index {

void gather_kernel(const OpIr& op, const KernelArgs& args);
void scatter_kernel(const OpIr& op, const KernelArgs& args);
void scatter_add_kernel(const OpIr& op, const KernelArgs& args);
void index_select_kernel(const OpIr& op, const KernelArgs& args);
void masked_fill_kernel(const OpIr& op, const KernelArgs& args);
void one_hot_kernel(const OpIr& op, const KernelArgs& args);
void sort_kernel(const OpIr& op, const KernelArgs& args);
void topk_kernel(const OpIr& op, const KernelArgs& args);


// Calls fn(T{}) with T the element type stored for dtype t.
template <class Fn>
void visit_dtype(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32: fn(float{}); return;
    case DType::i64: fn(std::int64_t{}); return;
    case DType::bool_: fn(bool{}); return;
    default: throw Error(op, std::string("dtype ") + dtype_name(t) + " is not supported on the CPU");
  }
}


// Throws (naming the op, the bad value and the input shapes) when any of idx[0, n) is outside
// [0, size). The first pass is branch-free so the common, valid case vectorizes.
inline void check_indices(const OpIr& op, const std::int64_t* idx, std::int64_t n, int dim, std::int64_t size) {
  bool bad = false;
  for (std::int64_t i = 0; i < n; ++i) bad |= static_cast<std::uint64_t>(idx[i]) >= static_cast<std::uint64_t>(size);
  if (!bad) return;
  for (std::int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= size) throw_index_out_of_range(op, idx[i], dim, size);
}

}  // namespace kiln::cpu::index
