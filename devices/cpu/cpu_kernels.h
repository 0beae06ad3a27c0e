// The CPU device's kernel table: one function per OpKind, filled by one registration function
// per op family (devices/cpu/kernels_<family>.cpp). Kernels read op.inputs/op.outputs for
// shapes and dtypes and use oneTBB for parallelism through parallel.h.
#pragma once
#include <array>
#include <span>

#include "kiln/devices/device.h"
#include "kiln/ops/registry.h"

namespace kiln::cpu {

using Kernel = void (*)(const OpIr& op, const KernelArgs& args);

struct KernelTable {
  std::array<Kernel, kOpCount> kernels{};
  void set(OpKind k, Kernel fn) { kernels[static_cast<std::size_t>(k)] = fn; }
  Kernel operator[](OpKind k) const { return kernels[static_cast<std::size_t>(k)]; }
};

void register_creation_kernels(KernelTable& t);
void register_elementwise_kernels(KernelTable& t);
void register_reduce_kernels(KernelTable& t);
void register_linalg_kernels(KernelTable& t);
void register_layout_kernels(KernelTable& t);
void register_conv_kernels(KernelTable& t);
void register_pool_kernels(KernelTable& t);  // kernels_pool.cpp
void register_index_kernels(KernelTable& t);
void register_norm_kernels(KernelTable& t);

// out = relu?(A @ B + bias) for a matmul message of a few rows, `bias` its last dim's n values,
// where B is already packed for such products (packed_weights.h: the epilogue applied as the
// product stores its blocks) or narrow (skinny_gemm.h: a pass over the small C after it). False,
// having done nothing, for any other product, or when the output overlaps A or the bias (then
// the product and its epilogue go the usual way).
bool matmul_with_bias(const OpIr& op, const KernelArgs& args, const float* bias, bool relu);

template <class T> T* out_ptr(const KernelArgs& a, std::size_t i) { return static_cast<T*>(a.outputs[i]->data()); }
template <class T> const T* in_ptr(const KernelArgs& a, std::size_t i) {
  return static_cast<const T*>(a.inputs[i]->data());
}

}  // namespace kiln::cpu
