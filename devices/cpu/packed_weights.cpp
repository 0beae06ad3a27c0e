#include "kiln/devices/cpu/packed_weights.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include "kiln/devices/cpu/core_team.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/devices/cpu/simd.h"

namespace kiln::cpu {

namespace {

using simd::VF;
constexpr int L = simd::kLanes;
using simd::kRegisters;
constexpr std::int64_t kPanelWidth = 2 * L;  // two vectors a row of a panel

// Matrices packed so far (counters().weights_packed; two threads packing one weight at once
// count it twice).
std::atomic<std::uint64_t> packed_count{0};

// Panel rows a block asks for ahead of its loads, into L1. The hardware prefetcher alone left a
// core's 800 KB share of the MLP's first layer (8 rows) at 50-62 GFLOP/s; 16-32 rows ahead gave
// 73-93 (in L2), and 1.15-1.3x from L3 (a harness on the 2-core Xeon); in the engine, a batch of 8
// through that layer on both cores took 59-67 us against 61-73 without (three runs each).
constexpr std::int64_t kPrefetchRows = 32;
// Only a pass of more rows than this prefetches. A pass of a few rows streams its panels with
// little arithmetic a byte, which the hardware prefetcher keeps up with alone; the prefetch
// instructions only took load slots: on a 2-core AMD EPYC the MLP's three packed products (from
// L3) took 20.3-20.8 us without them at 1 row against 22.1-22.5 with (2 rows: 20.1-20.5 against
// 21.8-22.8; 4 rows: 23.8-26.0 against 25.7-26.5; 8 rows the same either way).
constexpr int kMaxRowsWithoutPrefetch = 4;

// Panels a chunk of a core's part holds (CoreTeam::run_chunked): small enough that a core
// preempted mid-part leaves most of it to the other, large enough for a block of two panels.
constexpr std::int64_t kChunkPanels = 2;

// A's floats a stretch of k holds at most (a core's rows of A for that stretch, kept in L2 while
// the chunk's panels run through them), and the shortest stretch.
constexpr std::int64_t kStretchFloats = 48 << 10;
constexpr std::int64_t kMinStretch = 128;

// A's rows per pass over the panels: 2 accumulators a row, the panel's 2 vectors and A's
// broadcast in registers (AVX-512: 8, AVX2: 6).
constexpr int kRowsPerPass = std::min(8, (kRegisters - 3) / 2);

// Panels a block reads side by side, at most 4: enough accumulators to hide the FMA latency
// when there are few rows (one row: 4 panels, 8 accumulators), few enough to stay in registers.
template <int R>
constexpr int panels_per_block() {
  int p = 4;
  while (p > 1 && R * 2 * p + 2 * p + 1 > kRegisters) --p;
  return p;
}

// A Linear layer's epilogue, applied to C's values as they are stored (packed_weights.h:
// multiply).
struct Epilogue {
  const float* bias = nullptr;
  bool relu = false;
};

// A stretch of the sum over k that a block runs: `count` rows of the panels, which lie
// `panel_floats` apart. Every stretch but the first takes up the sums where C holds them, and
// only the last applies the epilogue: each element of C is still one chain of multiply-adds in
// k's order, stored and loaded between stretches, so the bits do not depend on where k is cut.
struct KSlice {
  std::int64_t count = 0, panel_floats = 0;
  bool first = true, last = true;
};

// Rows [0, R) of C (A's element (i, p) at a[i * a.row + p * a.step]) over panels [q0, q0 + P)
// (C's columns from q0 * width), the first of them at `panels`, for the stretch `ks` of k.
template <int R, int P>
void block(std::int64_t n, const float* a, AStrides as, const float* panels, float* c, std::int64_t q0, KSlice ks,
           Epilogue epilogue) {
  VF acc[R][P][2];
  if (ks.first) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < P; ++q) acc[r][q][0] = acc[r][q][1] = VF{};
  } else {
    for (int q = 0; q < P; ++q) {
      const std::int64_t j0 = (q0 + q) * kPanelWidth, cols = std::min(kPanelWidth, n - j0);
      for (int r = 0; r < R; ++r) {
        // Kept this plain: a version that skipped this zeroing with std::copy and std::fill into an
        // uninitialized row made the whole block twice as slow (resnet18's 7x7 layers 1.4 -> 2.9
        // ms; the accumulators no longer stayed in registers).
        alignas(64) float row[kPanelWidth] = {};
        const float* from = c + r * n + j0;
        if (cols < kPanelWidth)
          from = static_cast<const float*>(std::memcpy(row, from, static_cast<std::size_t>(cols) * sizeof(float)));
        acc[r][q][0] = simd::load(from);
        acc[r][q][1] = simd::load(from + L);
      }
    }
  }
  const std::int64_t panel_floats = ks.panel_floats;
  const float* bp = panels;
  for (std::int64_t p = 0; p < ks.count; ++p, bp += kPanelWidth, a += as.step) {
    VF b[P][2];
#pragma GCC unroll 4
    for (int q = 0; q < P; ++q) {
      if constexpr (R > kMaxRowsWithoutPrefetch) {
        // Each line asked for kPrefetchRows ahead (past a panel's end it reads the next one's
        // start, or nothing: a prefetch never faults; the address is an integer until then, as
        // it may lie past the allocation).
        const std::uintptr_t ahead =
            reinterpret_cast<std::uintptr_t>(bp + q * panel_floats) + kPrefetchRows * kPanelWidth * sizeof(float);
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
        if constexpr (kPanelWidth * sizeof(float) > 64)
          _mm_prefetch(reinterpret_cast<const char*>(ahead + 64), _MM_HINT_T0);
      }
      b[q][0] = simd::load(bp + q * panel_floats);
      b[q][1] = simd::load(bp + q * panel_floats + L);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const VF av = simd::splat(a[r * as.row]);
#pragma GCC unroll 4
      for (int q = 0; q < P; ++q) {
        acc[r][q][0] = simd::fma(av, b[q][0], acc[r][q][0]);
        acc[r][q][1] = simd::fma(av, b[q][1], acc[r][q][1]);
      }
    }
  }
  if (!ks.last) epilogue = Epilogue{};
  for (int q = 0; q < P; ++q) {
    const std::int64_t j0 = (q0 + q) * kPanelWidth;
    const std::int64_t cols = std::min(kPanelWidth, n - j0);  // the last panel may be part padding
    if (epilogue.bias) {
      alignas(64) float bias[kPanelWidth] = {};
      std::memcpy(bias, epilogue.bias + j0, static_cast<std::size_t>(cols) * sizeof(float));
      const VF b0 = simd::load(bias), b1 = simd::load(bias + L);
      for (int r = 0; r < R; ++r) {
        acc[r][q][0] += b0;
        acc[r][q][1] += b1;
      }
    }
    if (epilogue.relu)
      for (int r = 0; r < R; ++r)
        for (VF& v : acc[r][q]) v = simd::select(v < 0.0f, simd::splat(0.0f), v);  // as kiln's relu
    for (int r = 0; r < R; ++r) {
      float* dst = c + r * n + j0;
      if (cols == kPanelWidth) {
        simd::store(dst, acc[r][q][0]);
        simd::store(dst + L, acc[r][q][1]);
      } else {
        alignas(64) float row[kPanelWidth];
        simd::store(row, acc[r][q][0]);
        simd::store(row + L, acc[r][q][1]);
        std::memcpy(dst, row, static_cast<std::size_t>(cols) * sizeof(float));
      }
    }
  }
}

// Panels [q0, q1) of R rows, the first of them at `panels`: blocks of panels_per_block, then
// pairs, then single panels.
template <int R>
void rows(std::int64_t n, const float* a, AStrides as, const float* panels, float* c, std::int64_t q0, std::int64_t q1,
          KSlice ks, Epilogue epilogue) {
  constexpr int P = panels_per_block<R>();
  auto at = [&](std::int64_t q) { return panels + (q - q0) * ks.panel_floats; };
  std::int64_t q = q0;
  for (; q + P <= q1; q += P) block<R, P>(n, a, as, at(q), c, q, ks, epilogue);
  if constexpr (P > 2)
    for (; q + 2 <= q1; q += 2) block<R, 2>(n, a, as, at(q), c, q, ks, epilogue);
  for (; q < q1; ++q) block<R, 1>(n, a, as, at(q), c, q, ks, epilogue);
}

// Panels [q0, q1) of B [k, n] (or [n, k] when transposed) into `out`, each its k rows of
// kPanelWidth floats, the columns past n zero.
void pack_panels(const float* b, std::int64_t n, std::int64_t k, bool transposed, std::int64_t q0, std::int64_t q1,
                 float* out) {
  for (std::int64_t q = q0; q < q1; ++q) {
    const std::int64_t j0 = q * kPanelWidth, cols = std::min(kPanelWidth, n - j0);
    if (transposed) {
      // B [n, k]: column j of the product is B's row j, read front to back (the panel, k x
      // kPanelWidth floats, stays in cache while its columns are written).
      if (cols < kPanelWidth) std::fill(out, out + k * kPanelWidth, 0.0f);
      for (std::int64_t j = 0; j < cols; ++j) {
        const float* row = b + (j0 + j) * k;
        for (std::int64_t p = 0; p < k; ++p) out[p * kPanelWidth + j] = row[p];
      }
      out += k * kPanelWidth;
      continue;
    }
    for (std::int64_t p = 0; p < k; ++p, out += kPanelWidth) {
      std::memcpy(out, b + p * n + j0, static_cast<std::size_t>(cols) * sizeof(float));
      std::fill(out + cols, out + kPanelWidth, 0.0f);
    }
  }
}

// C[m, n] = A[m, k] @ B over B's panels, split over the core team: by panels (each core the same
// share every call, so that it keeps its share of kept weights in its cache, core_team.h), and by
// rows too when the panels are fewer than the cores and the rows many (a batch of a few hundred
// rows against a narrow weight). With `kept` null, B (at `b`) is packed as it goes: each chunk
// packs its panels into its thread's scratch first. Either way every element of C is the same
// chain of multiply-adds over k in order, so a product gives the same bits whether B was kept
// packed or not (a served model's first request, or a training step's changing weights, as its
// later ones).
void multiply_panels(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, AStrides as, float* c,
                     const float* kept, const float* b, bool transposed, Epilogue epilogue) {
  const std::int64_t panels = (n + kPanelWidth - 1) / kPanelWidth;
  CoreTeam& team = CoreTeam::get();
  const std::int64_t panel_parts = std::min<std::int64_t>(team.size(), panels);
  const std::int64_t passes = (m + kRowsPerPass - 1) / kRowsPerPass;
  const std::int64_t row_parts = std::clamp<std::int64_t>(team.size() / panel_parts, 1, passes);
  // In chunks of about kChunkPanels panels, so that a core whose thread the OS takes mid-part
  // leaves the rest of it to the other.
  const std::int64_t per_part = (panels + panel_parts - 1) / panel_parts;
  const int chunks = static_cast<int>(std::clamp<std::int64_t>(per_part / kChunkPanels, 1, CoreTeam::kMaxChunks));
  const auto task = [&](int i, int chunk) {
    if (i >= panel_parts * row_parts) return;
    const std::int64_t pi = i % panel_parts, ri = i / panel_parts;
    const std::int64_t p0 = panels * pi / panel_parts, p1 = panels * (pi + 1) / panel_parts;
    const std::int64_t q0 = p0 + (p1 - p0) * chunk / chunks, q1 = p0 + (p1 - p0) * (chunk + 1) / chunks;
    if (q0 == q1) return;
    const float* first = kept ? kept + q0 * k * kPanelWidth : nullptr;
    if (!kept) {
      thread_local std::vector<float> scratch;
      scratch.resize(static_cast<std::size_t>((q1 - q0) * k * kPanelWidth));
      pack_panels(b, n, k, transposed, q0, q1, scratch.data());
      first = scratch.data();
    }
    const std::int64_t r0 = passes * ri / row_parts * kRowsPerPass;
    const std::int64_t r1 = std::min(m, passes * (ri + 1) / row_parts * kRowsPerPass);
    // k in stretches whose part of A stays in L2 while every panel of the chunk runs through it
    // (with many rows and a long k, A and a panel outgrew L2 and came from L3 for each panel:
    // resnet18's last convolutions as products of 49 rows and k = 4608, conv_product.cpp).
    const std::int64_t stretch =
        std::max<std::int64_t>(kMinStretch, kStretchFloats / std::max<std::int64_t>(1, r1 - r0));
    for (std::int64_t p0 = 0; p0 < k; p0 += stretch) {
      const KSlice ks{std::min(stretch, k - p0), k * kPanelWidth, p0 == 0, p0 + stretch >= k};
      for (std::int64_t r = r0; r < r1; r += kRowsPerPass) {
        simd::with_count<kRowsPerPass>(std::min<std::int64_t>(r1 - r, kRowsPerPass), [&]<int R>() {
          rows<R>(n, a + r * as.row + p0 * as.step, as, first + p0 * kPanelWidth, c + r * n, q0, q1, ks, epilogue);
        });
      }
    }
  };
  if (kept) return team.run_chunked(chunks, task);
  // Unkept weights gain nothing from a core keeping its share in cache; as oneTBB tasks, two
  // products at once (a backward's input and weight gradients) share the cores, where a busy
  // team would run the second on its calling thread alone (mlp_train_step, 2 cores: 3.7-3.9 ms
  // a step on the team, 3.06-3.12 as tasks, 3.12-3.27 as OpenBLAS's tiles).
  parallel_for(panel_parts * row_parts * chunks, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) task(static_cast<int>(t / chunks), static_cast<int>(t % chunks));
  });
}

// What a buffer holds for B in this layout (a packed copy, or the marker of a first product), if
// anything.
const PackedMatrix* known_layout(const std::shared_ptr<const BufferDerived>& seen, std::int64_t n, std::int64_t k,
                                 bool transposed) {
  const auto* known = dynamic_cast<const PackedMatrix*>(seen.get());
  return known && known->matches(n, k, transposed) ? known : nullptr;
}

}  // namespace

void PackedMatrix::FreeAligned::operator()(float* p) const { std::free(p); }

PackedMatrix::PackedMatrix(const float* b, std::int64_t n, std::int64_t k, bool transposed, bool pack)
    : n_(n), k_(k), transposed_(transposed) {
  if (!pack) return;
  const std::int64_t panels = (n + kPanelWidth - 1) / kPanelWidth;
  const auto bytes = static_cast<std::size_t>(panels * k * kPanelWidth) * sizeof(float);
  panels_.reset(static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
  if (!panels_) throw std::bad_alloc();
  pack_panels(b, n, k, transposed, 0, panels, panels_.get());
}

void PackedMatrix::multiply(std::int64_t m, const float* a, float* c, const float* bias, bool relu) const {
  multiply_panels(m, n_, k_, a, AStrides{k_, 1}, c, panels_.get(), nullptr, transposed_, Epilogue{bias, relu});
}

void PackedMatrix::multiply(std::int64_t m, const float* a, AStrides a_strides, float* c, const float* bias) const {
  multiply_panels(m, n_, k_, a, a_strides, c, panels_.get(), nullptr, transposed_, Epilogue{bias, false});
}

void packed_product(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c,
                    bool b_transposed) {
  multiply_panels(m, n, k, a, AStrides{k, 1}, c, nullptr, b, b_transposed, Epilogue{});
}

void packed_product(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, AStrides a_strides, const float* b,
                    float* c, bool b_transposed, const float* bias) {
  multiply_panels(m, n, k, a, a_strides, c, nullptr, b, b_transposed, Epilogue{bias, false});
}

bool weight_packing_enabled() {
  // KILN_PACK_WEIGHTS=0: never (a service short of memory keeps its weights once).
  static const bool enabled = [] {
    const char* v = std::getenv("KILN_PACK_WEIGHTS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return enabled;
}

void count_packed_weight() { packed_count.fetch_add(1, std::memory_order_relaxed); }

std::shared_ptr<const PackedMatrix> packed_weights(Buffer& buffer, std::int64_t n, std::int64_t k, bool transposed) {
  if (!weight_packing_enabled()) return nullptr;
  const auto* b = static_cast<const float*>(buffer.data());
  const std::shared_ptr<const BufferDerived> seen = buffer.derived();
  if (const PackedMatrix* known = known_layout(seen, n, k, transposed)) {
    if (known->packed()) return std::static_pointer_cast<const PackedMatrix>(seen);
    // The second product with these contents: pack. (Two threads may both pack; either copy
    // is the same.)
    auto packed = std::make_shared<const PackedMatrix>(b, n, k, transposed, true);
    count_packed_weight();
    buffer.set_derived(packed);
    return packed;
  }
  buffer.set_derived(std::make_shared<const PackedMatrix>(b, n, k, transposed, false));
  return nullptr;
}

std::shared_ptr<const PackedMatrix> packed_weights_if_ready(const Buffer& buffer, std::int64_t n, std::int64_t k,
                                                            bool transposed) {
  const std::shared_ptr<const BufferDerived> seen = buffer.derived();
  const PackedMatrix* known = known_layout(seen, n, k, transposed);
  if (!known || !known->packed()) return nullptr;
  return std::static_pointer_cast<const PackedMatrix>(seen);
}

std::uint64_t packed_weight_count() { return packed_count.load(std::memory_order_relaxed); }

}  // namespace kiln::cpu
