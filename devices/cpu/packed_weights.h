// A weight matrix packed for the products of rows against it: a served model's few requests
// against its weights (skinny_gemm.h), and up to a few hundred rows (a batch, a sequence's tokens
// through an encoder's Linear layers), where OpenBLAS would pack B again on every call. B's
// columns in panels of kPanelWidth, each panel its k rows of kPanelWidth contiguous floats. A
// product then reads B once, front to back, whether B was stored [k, n] or [n, k]: each core
// reads its panels as a few sequential streams, where the unpacked [k, n] kernel read 192-byte
// pieces of rows 2 KiB apart, which the hardware prefetcher does not follow (8 x 784 x 512, one
// core: 1.3-1.6x; see bench/RESULTS.md).
//
// Packing costs about a copy of B, so a matrix is packed on its second product with the same
// contents and layout, and kept with the buffer (Buffer::set_derived) until the buffer goes or
// holds another tensor's values: a served model's weights are packed once, while a training step,
// whose weights are new values each step, never keeps a copy (its products pack as they go,
// packed_product below, with the same arithmetic). The packed copy is held beside the
// weights (a served model's weights take twice their memory on the CPU), outside the pool;
// KILN_PACK_WEIGHTS=0 turns packing off. A B used in both layouts by turns (a tied weight) keeps
// only the latest layout's marker and is never packed.
#pragma once
#include <cstdint>
#include <memory>

#include "kiln/memory/memory.h"

namespace kiln::cpu {

// Where A's element (i, p) lies: a[i * row + p * step]. A row-major A [m, k] is {k, 1}; an A
// given as its transpose [k, m] (conv's unfolded windows, devices/cpu/conv_product.cpp) {1, m}.
struct AStrides {
  std::int64_t row = 0, step = 1;
};

class PackedMatrix final : public BufferDerived {
 public:
  // B [k, n] (or [n, k] with `transposed`) at `b`, packed now when `pack`; else a marker that
  // this buffer's contents were used once in this layout.
  PackedMatrix(const float* b, std::int64_t n, std::int64_t k, bool transposed, bool pack);
  bool matches(std::int64_t n, std::int64_t k, bool transposed) const {
    return n == n_ && k == k_ && transposed == transposed_;
  }
  bool packed() const { return panels_ != nullptr; }
  // C[m, n] = A[m, k] @ B (a pass over B per 8 rows), split over the core team by panels, and
  // by rows too when the panels are fewer than the cores. With `bias` (n values), C = A @ B +
  // bias, then with `relu` max(C, 0) as kiln's relu computes it: a Linear layer's epilogue,
  // applied as each block is stored. The same bits as packed_product on the unpacked B.
  void multiply(std::int64_t m, const float* a, float* c, const float* bias = nullptr, bool relu = false) const;
  // The same with A laid out by `a_strides`.
  void multiply(std::int64_t m, const float* a, AStrides a_strides, float* c, const float* bias) const;

 private:
  struct FreeAligned {
    void operator()(float* p) const;
  };
  std::int64_t n_, k_;
  bool transposed_;
  std::unique_ptr<float[], FreeAligned> panels_;
};

// C[m, n] = A[m, k] @ B with PackedMatrix::multiply's arithmetic, for a B not kept packed (B
// [k, n], or [n, k] with `b_transposed`): each core packs the panels it multiplies as it goes. A
// product of 1 to 512 rows takes this path until its B is kept packed (with packing off, 9 to 512
// rows always), so the first product with a weight, and every product with a training step's new
// weights, gives the bits the kept one will (results never depend on what ran before).
void packed_product(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c,
                    bool b_transposed);
// The same with A laid out by `a_strides`, plus `bias` (n values, or none) as multiply adds it.
void packed_product(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, AStrides a_strides, const float* b,
                    float* c, bool b_transposed, const float* bias);

// The packed form of the matrix B in `buffer` (f32, [k, n], or [n, k] with `transposed`) when
// it is worth it, else null (then the caller multiplies unpacked). See the top for when.
std::shared_ptr<const PackedMatrix> packed_weights(Buffer& buffer, std::int64_t n, std::int64_t k, bool transposed);
// The packed form of B in `buffer` if it is packed already, else null; unlike packed_weights,
// this does not count as one of B's products.
std::shared_ptr<const PackedMatrix> packed_weights_if_ready(const Buffer& buffer, std::int64_t n, std::int64_t k,
                                                            bool transposed);
// Matrices packed so far, in this process (the CPU device's counter).
std::uint64_t packed_weight_count();
// Whether weights are packed and kept beside their buffers at all (KILN_PACK_WEIGHTS=0: never),
// and the counter's step, for the other kernels that keep packed weights (conv_weights.h).
bool weight_packing_enabled();
void count_packed_weight();

}  // namespace kiln::cpu
