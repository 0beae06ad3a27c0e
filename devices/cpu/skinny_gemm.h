// Products of a few rows against a large matrix (a served model's batch of 1 to 8 requests times
// its weights): C[m, n] = A[m, k] @ B, B stored [k, n] or, with `b_transposed`, [n, k] (a Linear
// layer's weight). Split over the cores by CoreTeam so each core reads the same share of B every
// time and keeps it in its cache; within a part, register-blocked FMA kernels of kiln's own.
// skinny_gemm runs where weights are never packed (KILN_PACK_WEIGHTS=0): its split of the sum
// over k differs in the last bits from the packed product (packed_weights.h), which otherwise
// takes these products from a weight's first on. Bigger products stay with OpenBLAS.
#pragma once
#include <cstdint>

namespace kiln::cpu {

// Products of a few rows against a matrix too narrow to split (n of at most two vectors: a
// classifier's last layer, 512 x 10), on the calling thread: a team's hand-offs would cost more
// than the product (1 x 512 x 10: 0.33 us, against 0.70 us in OpenBLAS's sgemv).
bool narrow_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k);
void narrow_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c,
                 bool b_transposed);

// Whether skinny_gemm takes a product of these sizes.
bool skinny_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k);
// A, B, C contiguous row-major; C is written, not accumulated.
void skinny_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c,
                 bool b_transposed);

}  // namespace kiln::cpu
