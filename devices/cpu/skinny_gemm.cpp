#include "kiln/devices/cpu/skinny_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/devices/cpu/core_team.h"
#include "kiln/devices/cpu/simd.h"

namespace kiln::cpu {

namespace {

using simd::VF;
constexpr int kSkinnyLanes = simd::kLanes;

constexpr std::int64_t kMaxRows = 8;
using simd::kRegisters;
// A pass over B serves this many rows of A.
constexpr int kSkinnyRowsPerPass = kSkinnyLanes == 16 ? 8 : 4;
// Below this many weights a product is over before a team could split it.
constexpr std::int64_t kMinWeights = 1 << 15;
// A narrow product (narrow_gemm) of up to this many weights runs on one thread: at most 8 x 2^16
// multiply-adds, a few microseconds on one core.
constexpr std::int64_t kMaxNarrowWeights = 1 << 16;

// B stored [k, n]: rows r0..r0+R of C over columns [j0, j0 + V * kSkinnyLanes), over k rows of B (A's
// rows are lda apart). R * V accumulators stay in registers; each B vector loaded is used R times.
template <int R, int V>
void block_kn(std::int64_t n, std::int64_t k, std::int64_t lda, const float* a, const float* b, float* c,
              std::int64_t j0) {
  VF acc[R][V] = {};
  const float* bp = b + j0;
  for (std::int64_t p = 0; p < k; ++p, bp += n) {
    VF bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) bv[v] = simd::load(bp + v * kSkinnyLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const VF av = simd::splat(a[r * lda + p]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = simd::fma(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) simd::store(c + r * n + j0 + v * kSkinnyLanes, acc[r][v]);
}

// The columns [j0, j1) that are not a whole block: one vector, then scalars.
template <int R> void tail_kn(std::int64_t n, std::int64_t k, std::int64_t lda, const float* a, const float* b, float* c,
                              std::int64_t j0, std::int64_t j1) {
  for (; j0 + kSkinnyLanes <= j1; j0 += kSkinnyLanes) block_kn<R, 1>(n, k, lda, a, b, c, j0);
  for (; j0 < j1; ++j0)
    for (int r = 0; r < R; ++r) {
      float s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a[r * lda + p] * b[p * n + j0];
      c[r * n + j0] = s;
    }
}

// Enough independent accumulators to hide the FMA latency (at least 8 where possible), few
// enough that they, the B vectors and A's broadcast stay in registers: R * V + V + 1.
template <int R> constexpr int kn_vectors() {
  int v = 8;
  while (v > 1 && R * v + v + 1 > kRegisters) --v;
  return v;
}

// Every column of rows r..r+R of C, over k rows of B.
template <int R> void rows_kn(std::int64_t n, std::int64_t k, std::int64_t lda, const float* a, const float* b, float* c) {
  constexpr int V = kn_vectors<R>();
  std::int64_t j0 = 0;
  for (; j0 + V * kSkinnyLanes <= n; j0 += V * kSkinnyLanes) block_kn<R, V>(n, k, lda, a, b, c, j0);
  tail_kn<R>(n, k, lda, a, b, c, j0, n);
}

// B stored [n, k]: C[r, j] = dot(A row r, B row j), for 4 rows of B at a time.
template <int R, int J>
void block_nk(std::int64_t n, std::int64_t k, const float* a, const float* b, float* c, std::int64_t j0) {
  VF acc[R][J] = {};
  std::int64_t p = 0;
  for (; p + kSkinnyLanes <= k; p += kSkinnyLanes) {
    VF bv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) bv[j] = simd::load(b + (j0 + j) * k + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const VF av = simd::load(a + r * k + p);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = simd::fma(av, bv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < J; ++j) {
      float s = 0;
      for (int l = 0; l < kSkinnyLanes; ++l) s += acc[r][j][l];
      for (std::int64_t q = p; q < k; ++q) s += a[r * k + q] * b[(j0 + j) * k + q];
      c[r * n + j0 + j] = s;
    }
}

// Rows of B per block: R * J accumulators, R A vectors and J B vectors in registers.
template <int R> constexpr int nk_rows() {
  int j = 4;
  while (j > 1 && R * j + R + j > kRegisters) --j;
  return j;
}

template <int R> void rows_nk(std::int64_t n, std::int64_t k, const float* a, const float* b, float* c, std::int64_t j0,
                              std::int64_t j1) {
  constexpr int J = nk_rows<R>();
  for (; j0 + J <= j1; j0 += J) block_nk<R, J>(n, k, a, b, c, j0);
  for (; j0 < j1; ++j0) block_nk<R, 1>(n, k, a, b, c, j0);
}

// B [n, k]: columns [j0, j1) of every row of C, kSkinnyRowsPerPass rows of A per pass over B.
void part_nk(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c, std::int64_t j0,
             std::int64_t j1) {
  for (std::int64_t r = 0; r < m;) {
    const std::int64_t rows = std::min<std::int64_t>(m - r, kSkinnyRowsPerPass);
    simd::with_count<kSkinnyRowsPerPass>(rows, [&]<int R>() { rows_nk<R>(n, k, a + r * k, b, c + r * n, j0, j1); });
    r += rows;
  }
}

// B [k, n]: every column of C over B's rows [p0, p1), into `out` (m x n), kSkinnyRowsPerPass rows of A
// per pass over B.
void part_kn(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* out,
             std::int64_t p0, std::int64_t p1) {
  for (std::int64_t r = 0; r < m;) {
    const std::int64_t rows = std::min<std::int64_t>(m - r, kSkinnyRowsPerPass);
    simd::with_count<kSkinnyRowsPerPass>(rows, [&]<int R>() { rows_kn<R>(n, p1 - p0, k, a + r * k + p0, b + p0 * n, out + r * n); });
    r += rows;
  }
}

// B [k, n] no wider than two vectors (a classifier's last layer, 512 x 10): rows [0, R) of C,
// each row of B one or V vectors. The lanes past n read the next row of B and are dropped; B's
// last rows, where such a load would pass its end, come from a padded copy. S sets of
// accumulators over consecutive rows of B hide the FMA latency (one set left 512 x 10 waiting on
// one chain of 512 FMAs).
template <int R, int V> void narrow_kn(std::int64_t n, std::int64_t k, const float* a, const float* b, float* c) {
  constexpr int S = std::max(1, 8 / (R * V));
  VF acc[S][R][V] = {};
  // Rows p whose V vectors lie inside B: p * n + V * kSkinnyLanes <= k * n.
  const std::int64_t whole = k * n >= V * kSkinnyLanes ? std::min(k, (k * n - V * kSkinnyLanes) / n + 1) : 0;
  auto fma_row = [&](VF (&sum)[R][V], const float* row, std::int64_t p) {
    VF bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) bv[v] = simd::load(row + v * kSkinnyLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const VF av = simd::splat(a[r * k + p]);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) sum[r][v] = simd::fma(av, bv[v], sum[r][v]);
    }
  };
  std::int64_t p = 0;
  for (; p + S <= whole; p += S)
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) fma_row(acc[s], b + (p + s) * n, p + s);
  for (; p < k; ++p) {
    alignas(64) float padded[V * kSkinnyLanes] = {};
    std::memcpy(padded, b + p * n, static_cast<std::size_t>(n) * sizeof(float));
    fma_row(acc[0], padded, p);
  }
  for (int r = 0; r < R; ++r) {
    alignas(64) float out[V * kSkinnyLanes];
    for (int v = 0; v < V; ++v) {
      VF sum = acc[0][r][v];
      for (int s = 1; s < S; ++s) sum += acc[s][r][v];
      simd::store(out + v * kSkinnyLanes, sum);
    }
    std::memcpy(c + r * n, out, static_cast<std::size_t>(n) * sizeof(float));
  }
}

}  // namespace

bool skinny_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k) {
  // k of at least 64: every part of a split over B's rows gets some (part 0 writes C).
  return m >= 1 && m <= kMaxRows && n >= 2 * kSkinnyLanes && k >= 64 && n * k >= kMinWeights;
}

bool narrow_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m >= 1 && m <= kMaxRows && n >= 1 && n <= 2 * kSkinnyLanes && k >= 16 && n * k <= kMaxNarrowWeights;
}

void narrow_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c,
                 bool b_transposed) {
  if (b_transposed) return part_nk(m, n, k, a, b, c, 0, n);  // n dot products of A's rows
  simd::with_count<kMaxRows>(m, [&]<int R>() {
    if (n <= kSkinnyLanes) narrow_kn<R, 1>(n, k, a, b, c);
    else narrow_kn<R, 2>(n, k, a, b, c);
  });
}

void skinny_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c,
                 bool b_transposed) {
  CoreTeam& team = CoreTeam::get();
  const std::int64_t parts = team.size();
  if (b_transposed) {
    // B [n, k]: part i takes B's rows (C's columns) [j0, j1), whole groups of 4, the same for
    // every call of this size, so that each core reads the same contiguous block of B each time.
    const std::int64_t groups = (n + 3) / 4;
    team.run([&](int i) {
      const std::int64_t j0 = std::min(n, groups * i / parts * 4);
      const std::int64_t j1 = std::min(n, groups * (i + 1) / parts * 4);
      if (j0 < j1) part_nk(m, n, k, a, b, c, j0, j1);
    });
    return;
  }
  // B [k, n]: part i takes B's rows [p0, p1) (contiguous, as above; a split by columns gave each
  // core strided half-rows, which alias in its L2 and did not stay there) and sums them into a
  // partial C of its own; part 0's goes straight to C, and the others are added after.
  // The caller's scratch (a lambda names a thread_local as the running thread's own: hence the
  // plain pointer).
  thread_local std::vector<float> partials;
  partials.assign(static_cast<std::size_t>((parts - 1) * m * n), 0.0f);
  float* const scratch = partials.data();
  team.run([&](int i) {
    const std::int64_t p0 = k * i / parts, p1 = k * (i + 1) / parts;
    float* out = i == 0 ? c : scratch + (i - 1) * m * n;
    if (p0 < p1) part_kn(m, n, k, a, b, out, p0, p1);
  });
  for (std::int64_t i = 1; i < parts; ++i) {
    const float* pi = scratch + (i - 1) * m * n;
    for (std::int64_t e = 0; e < m * n; ++e) c[e] += pi[e];
  }
}

}  // namespace kiln::cpu
