// The register tile that conv and conv_input_grad multiply with (devices/cpu/conv_gemm_forward.cpp,
// conv_winograd.cpp): up to kRows output channels by up to kVectors vectors of positions, its
// accumulators in registers (24 of AVX-512's 32, 12 of AVX2's 16) beside one vector per column of
// positions and one broadcast weight. The weights come packed kRows to a reduction row; each
// reduction row of the other operand is one offset from the tile's first position. Private to
// devices/cpu.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "kiln/devices/cpu/simd.h"

namespace kiln::cpu::conv_detail {

using simd::VF;

#if defined(__AVX512F__)
inline constexpr int kRows = 8;
inline VF broadcast(float v) { return reinterpret_cast<VF>(_mm512_set1_ps(v)); }
#else
inline constexpr int kRows = 4;
inline VF broadcast(float v) { return reinterpret_cast<VF>(_mm256_set1_ps(v)); }
#endif
inline constexpr int kVectors = 3;
inline constexpr std::int64_t kTile = kVectors * simd::kLanes;

// c[i * ldc + j] = sum over r < depth of a[r * kRows + i] * b[offset[r] + j], for i < Rows and j <
// V vectors, the sum taken in r's order.
template <int Rows, int V>
void tile_product(const float* a, const float* b, const std::int64_t* offset, std::int64_t depth, float* c,
                  std::int64_t ldc) {
  VF acc[Rows][V] = {};
  for (std::int64_t r = 0; r < depth; ++r, a += kRows) {
    const float* row = b + offset[r];
    VF v[V];
    for (int j = 0; j < V; ++j) v[j] = simd::load(row + j * simd::kLanes);
    for (int i = 0; i < Rows; ++i) {
      const VF w = broadcast(a[i]);
      for (int j = 0; j < V; ++j) acc[i][j] = simd::fma(w, v[j], acc[i][j]);
    }
  }
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < V; ++j) simd::store(c + i * ldc + j * simd::kLanes, acc[i][j]);
}

using TileProduct = void (*)(const float*, const float*, const std::int64_t*, std::int64_t, float*, std::int64_t);

template <int Rows, std::size_t... V>
constexpr std::array<TileProduct, kVectors> tile_products_of(std::index_sequence<V...>) {
  return {tile_product<Rows, static_cast<int>(V) + 1>...};
}
template <std::size_t... R>
constexpr std::array<std::array<TileProduct, kVectors>, kRows> tile_product_table(std::index_sequence<R...>) {
  return {tile_products_of<static_cast<int>(R) + 1>(std::make_index_sequence<kVectors>{})...};
}
// kTileProducts[rows - 1][vectors - 1]
inline constexpr auto kTileProducts = tile_product_table(std::make_index_sequence<kRows>{});

// The weights of a product: rows x depth values, packed in blocks of kRows rows, reduction row by
// reduction row, the rows past the last block's end zero.
struct PackedWeights {
  std::int64_t rows = 0, depth = 0;
  std::unique_ptr<float[]> data;
  template <class Value>
  PackedWeights(std::int64_t n_rows, std::int64_t n_depth, Value value)
      : rows(n_rows), depth(n_depth), data(new float[static_cast<std::size_t>(blocks() * kRows * depth)]) {
    for (std::int64_t b = 0; b < blocks(); ++b)
      for (std::int64_t r = 0; r < depth; ++r)
        for (std::int64_t i = b * kRows; i < (b + 1) * kRows; ++i)
          data[static_cast<std::size_t>((b * depth + r) * kRows + i % kRows)] = i < rows ? value(i, r) : 0.0f;
  }
  std::int64_t blocks() const { return (rows + kRows - 1) / kRows; }
  int rows_of(std::int64_t block) const {
    return static_cast<int>(std::min<std::int64_t>(kRows, rows - block * kRows));
  }
  const float* block(std::int64_t b) const { return data.get() + b * depth * kRows; }
};

// dst[k] = v[k] + bias for k < n <= kLanes. Without a bias nothing is added: a -0 stays -0.
inline void store_lanes(float* dst, VF v, std::int64_t n, const float* bias) {
  if (bias) v = v + broadcast(*bias);
  if (n == simd::kLanes) return simd::store(dst, v);
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n) - 1), reinterpret_cast<__m512>(v));
#else
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  _mm256_maskstore_ps(dst, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes),
                      reinterpret_cast<__m256>(v));
#endif
}

// dst[k] = src[k] + bias for k < n: whole vectors, then one masked vector.
inline void store_run(float* dst, const float* src, std::int64_t n, const float* bias) {
  std::int64_t k = 0;
  for (; k + simd::kLanes <= n; k += simd::kLanes) store_lanes(dst + k, simd::load(src + k), simd::kLanes, bias);
  if (k == n) return;
#if defined(__AVX512F__)
  const auto m = static_cast<__mmask16>((1u << (n - k)) - 1);
  store_lanes(dst + k, reinterpret_cast<VF>(_mm512_maskz_loadu_ps(m, src + k)), n - k, bias);
#else
  const __m256i m =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  store_lanes(dst + k, reinterpret_cast<VF>(_mm256_maskload_ps(src + k, m)), n - k, bias);
#endif
}

}  // namespace kiln::cpu::conv_detail
