// Stride-1 3x3 convolutions by Winograd's F(2x2, 3x3) (devices/cpu/conv_gemm.h): a 4x4 patch d of
// the input and a 3x3 kernel g give a 2x2 tile of outputs A^T [(G g G^T) . (B^T d B)] A, where
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
//   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1],
// so that each of the 16 elements of the transformed tile is one product summed over the input
// channels: 16 multiplies per tile and pair of channels where the direct sum takes 36. The
// transforms only add, subtract and halve, so the values stay as close to the direct sums as
// another order of summation would.
//
// A task takes a block of tile rows of one image, group and depth slice: the window planes
// (stride-2 phases of the padded input) give each tile's 4x4 patch at 16 offsets; the patches'
// transforms U[xi][c][tile] feed 16 products M[xi] = V[xi] U[xi] with the transformed weights
// V[xi][o][c], tiled as conv's are (devices/cpu/conv_tile.h), and M's transforms are the outputs.
// Where the transformed weights outgrow L2 (a batch of one through resnet18's last layers), a
// block's output channels are split over tasks instead, which share its U (conv_gemm.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/devices/cpu/conv_gemm.h"
#include "kiln/devices/cpu/conv_tile.h"
#include "kiln/devices/cpu/parallel.h"

namespace kiln::cpu::conv_detail {

namespace {

constexpr int kXi = 16;  // elements of a transformed tile

// Lanes a0 b0 a1 b1 ... of two vectors: the even and odd output columns of consecutive tiles.
void interleave(VF a, VF b, VF& lo, VF& hi) {
#if defined(__AVX512F__)
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  lo = reinterpret_cast<VF>(_mm512_permutex2var_ps(reinterpret_cast<__m512>(a), first, reinterpret_cast<__m512>(b)));
  hi = reinterpret_cast<VF>(_mm512_permutex2var_ps(reinterpret_cast<__m512>(a), second, reinterpret_cast<__m512>(b)));
#else
  const __m256 l = _mm256_unpacklo_ps(reinterpret_cast<__m256>(a), reinterpret_cast<__m256>(b));
  const __m256 h = _mm256_unpackhi_ps(reinterpret_cast<__m256>(a), reinterpret_cast<__m256>(b));
  lo = reinterpret_cast<VF>(_mm256_permute2f128_ps(l, h, 0x20));
  hi = reinterpret_cast<VF>(_mm256_permute2f128_ps(l, h, 0x31));
#endif
}

// A task's buffers, 64-byte aligned. Each xi's block is padded by a cache line: the blocks are
// often a multiple of 4 KiB long, and the 16 streams of a transform would share cache sets.
struct Transformed {
  std::int64_t positions = 0, u_stride = 0, m_stride = 0;
  float* u = nullptr;  // U[xi][c][position]: xi * u_stride + c * positions + q
  float* m = nullptr;  // M[xi][o][position]
};
Transformed transformed_buffers(std::int64_t positions, std::int64_t in_channels, std::int64_t out_rows,
                                std::vector<float>& storage) {
  Transformed t;
  t.positions = positions;
  t.u_stride = in_channels * positions + simd::kLanes;
  t.m_stride = out_rows * positions + simd::kLanes;
  const auto needed = static_cast<std::size_t>(kXi * (t.u_stride + t.m_stride) + 16);
  if (storage.size() < needed) storage.resize(needed);  // grown only: a resize up zeroes
  const auto at = reinterpret_cast<std::uintptr_t>(storage.data());
  t.u = storage.data() + ((64 - at % 64) % 64) / sizeof(float);
  t.m = t.u + kXi * t.u_stride;
  return t;
}

void transform_input(const WindowPlanes& planes, std::int64_t in_channels, const Transformed& t) {
  for (std::int64_t c = 0; c < in_channels; ++c) {
    const float* d[4][4];
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) d[a][b] = planes.data + planes.offsets[static_cast<std::size_t>(c * 16 + a * 4 + b)];
    float* u = t.u + c * t.positions;
    for (std::int64_t q = 0; q < t.positions; q += simd::kLanes) {
      VF s[4][4];  // B^T d
      for (int b = 0; b < 4; ++b) {
        const VF d0 = simd::load(d[0][b] + q), d1 = simd::load(d[1][b] + q);
        const VF d2 = simd::load(d[2][b] + q), d3 = simd::load(d[3][b] + q);
        s[0][b] = d0 - d2;
        s[1][b] = d1 + d2;
        s[2][b] = d2 - d1;
        s[3][b] = d1 - d3;
      }
      for (int a = 0; a < 4; ++a) {  // (B^T d) B
        float* to = u + (a * 4) * t.u_stride + q;
        simd::store(to, s[a][0] - s[a][2]);
        simd::store(to + t.u_stride, s[a][1] + s[a][2]);
        simd::store(to + 2 * t.u_stride, s[a][2] - s[a][1]);
        simd::store(to + 3 * t.u_stride, s[a][1] - s[a][3]);
      }
    }
  }
}

// M[xi] = V[xi] U[xi]: for each xi the rows of U stay in L1 while every block of outputs runs
// through them.
void multiply(const PackedWeights* v, std::int64_t in_channels, const Transformed& t, BlockRange channels,
              std::vector<std::int64_t>& rows) {
  rows.resize(static_cast<std::size_t>(in_channels));
  for (std::int64_t c = 0; c < in_channels; ++c) rows[static_cast<std::size_t>(c)] = c * t.positions;
  for (int xi = 0; xi < kXi; ++xi) {
    const PackedWeights& a = v[xi];
    for (std::int64_t b = channels.begin; b < channels.end; ++b) {
      for (std::int64_t q = 0; q < t.positions; q += kTile) {
        const auto vectors = std::min<std::int64_t>(kVectors, (t.positions - q) / simd::kLanes);
        kTileProducts[static_cast<std::size_t>(a.rows_of(b) - 1)][static_cast<std::size_t>(vectors - 1)](
            a.block(b), t.u + xi * t.u_stride + q, rows.data(), in_channels,
            t.m + xi * t.m_stride + b * kRows * t.positions + q, t.positions);
      }
    }
  }
}

// The outputs of tile rows [range.u0, range.u1), tile columns [range.w0, range.w1): row 2 u + a,
// columns 2 w and 2 w + 1 of output channels [o0, o1), from A^T M A.
void transform_output(const Winograd3x3& p, const Transformed& t, const OutputRange& range, std::int64_t width,
                      std::int64_t o0, std::int64_t o1, float* out, const float* bias) {
  const std::int64_t out_h = p.out_h(), out_w = p.out_w(), plane = p.slices * out_h * out_w;
  for (std::int64_t o = o0; o < o1; ++o) {
    const float* m = t.m + o * t.positions;
    for (std::int64_t r = 0; r < range.rows(); ++r) {
      for (std::int64_t w = 0; w < range.columns(); w += simd::kLanes) {
        const std::int64_t q = r * width + w;
        VF s[2][4];  // A^T M
        for (int b = 0; b < 4; ++b) {
          const VF m0 = simd::load(m + b * t.m_stride + q), m1 = simd::load(m + (4 + b) * t.m_stride + q);
          const VF m2 = simd::load(m + (8 + b) * t.m_stride + q), m3 = simd::load(m + (12 + b) * t.m_stride + q);
          s[0][b] = m0 + m1 + m2;
          s[1][b] = m1 - m2 - m3;
        }
        const std::int64_t column = 2 * (range.w0 + w);
        const std::int64_t valid =
            std::min<std::int64_t>({2 * simd::kLanes, 2 * (range.columns() - w), out_w - column});
        for (int a = 0; a < 2; ++a) {  // (A^T M) A
          const std::int64_t row = 2 * (range.u0 + r) + a;
          if (row >= out_h) break;
          VF lo, hi;
          interleave(s[a][0] + s[a][1] + s[a][2], s[a][1] - s[a][2] - s[a][3], lo, hi);
          float* to = out + o * plane + row * out_w + column;
          store_lanes(to, lo, std::min<std::int64_t>(valid, simd::kLanes), bias ? bias + o : nullptr);
          if (valid > simd::kLanes) store_lanes(to + simd::kLanes, hi, valid - simd::kLanes, bias ? bias + o : nullptr);
        }
      }
    }
  }
}

}  // namespace

// V[xi] = G g G^T for each (output, input) channel pair, packed for one product per xi.
std::vector<PackedWeights> winograd_weights(const Winograd3x3& p) {
  const std::int64_t pairs = p.out_channels * p.in_channels;
  std::vector<float> v(static_cast<std::size_t>(p.groups * pairs * kXi));
  for (std::int64_t e = 0; e < p.groups * pairs; ++e) {
    const float* g = p.weights + e * 9;
    float t[4][3];  // G g
    for (int j = 0; j < 3; ++j) {
      t[0][j] = g[j];
      t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
      t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
      t[3][j] = g[6 + j];
    }
    float* to = v.data() + e * kXi;  // (G g) G^T
    for (int i = 0; i < 4; ++i) {
      to[i * 4 + 0] = t[i][0];
      to[i * 4 + 1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
      to[i * 4 + 2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
      to[i * 4 + 3] = t[i][2];
    }
  }
  std::vector<PackedWeights> packed;
  for (std::int64_t grp = 0; grp < p.groups; ++grp)
    for (int xi = 0; xi < kXi; ++xi)
      packed.emplace_back(p.out_channels, p.in_channels, [&](std::int64_t o, std::int64_t c) {
        return v[static_cast<std::size_t>(((grp * p.out_channels + o) * p.in_channels + c) * kXi + xi)];
      });
  return packed;
}

bool winograd_pays(std::int64_t in_channels, std::int64_t out_channels) {
  // The transforms cost about as much per tile as 16 channels' products.
  return in_channels >= 16 && out_channels >= 16;
}

void winograd_conv3x3(const Winograd3x3& p) {
  std::vector<PackedWeights> made;
  if (p.transformed == nullptr) made = winograd_weights(p);
  const PackedWeights* v = p.transformed ? p.transformed : made.data();
  const std::int64_t tile_rows = (p.out_h() + 1) / 2, tile_columns = (p.out_w() + 1) / 2;
  const AxisTaps h(2, p.in_h, {-p.pad_h, 1 - p.pad_h, 2 - p.pad_h, 3 - p.pad_h});
  const AxisTaps w(2, p.in_w, {-p.pad_w, 1 - p.pad_w, 2 - p.pad_w, 3 - p.pad_w});
  const std::int64_t outer = p.batch * p.groups * p.slices;
  const std::int64_t out_rows = v[0].blocks() * kRows;
  // Transformed tiles of up to 1 MiB stay in L2, but a task takes at least 4 register tiles of
  // positions where the image has them: the products of a few channels' tile against one or two
  // vectors of positions load a broadcast weight for each multiply-add or two, and many channels
  // do so much arithmetic per element of U and M that these come from L3 at no cost. Weights
  // past L2 split the output channels instead of the rows (conv_gemm.h: weights_outgrow_cache).
  const bool heavy = weights_outgrow_cache(kXi * out_rows * p.in_channels);
  const std::int64_t per_position = kXi * (p.in_channels + out_rows);
  const TaskBlocks blocks =
      task_blocks(tile_rows, tile_columns, p.in_channels * 4, h, w, per_position, heavy ? 1 : (16 + outer - 1) / outer,
                  std::max<std::int64_t>(256 << 10, per_position * 4 * kTile));
  const std::int64_t chunks = heavy ? channel_chunks(outer * blocks.count(), v[0].blocks()) : 1;
  const std::int64_t in_plane = p.slices * p.in_h * p.in_w, out_plane = p.slices * p.out_h() * p.out_w();

  // Spatial task t: its image, group, depth slice and tile rows and columns.
  struct Place {
    std::int64_t n, grp, slice;
    OutputRange range;
    std::int64_t width, positions;  // of its planes, and its positions rounded up to whole vectors
  };
  const auto place = [&](std::int64_t t) {
    Place at;
    at.slice = t / blocks.count() % p.slices;
    at.grp = t / blocks.count() / p.slices % p.groups;
    at.n = t / blocks.count() / p.slices / p.groups;
    at.range = blocks.range(t % blocks.count(), tile_rows, tile_columns);
    at.width = at.range.columns() + w.halo();
    at.positions = (at.range.rows() * at.width + simd::kLanes - 1) / simd::kLanes * simd::kLanes;
    return at;
  };
  // Input channels [c0, c1) of a task's planes, transformed into U's rows c0 on.
  const auto transform_channels = [&](const Place& at, std::int64_t c0, std::int64_t c1, const Transformed& tr,
                                      std::vector<float>& plane_storage, WindowPlanes& planes) {
    PlaneSource src;
    src.channels = c1 - c0;
    src.channel_stride = in_plane;
    src.slice_size = p.in_h * p.in_w;
    src.slices = {at.slice};
    src.data = p.src + ((at.n * p.groups + at.grp) * p.in_channels + c0) * in_plane;
    build_planes(src, h, w, at.range, at.positions - at.range.rows() * at.width + at.width, plane_storage, planes);
    Transformed rows_from_c0 = tr;
    rows_from_c0.u += c0 * at.positions;
    transform_input(planes, c1 - c0, rows_from_c0);
  };
  // Output channel blocks `channels` of a task from its transformed input.
  const auto products = [&](const Place& at, const Transformed& tr, BlockRange channels,
                            std::vector<std::int64_t>& rows) {
    multiply(v + at.grp * kXi, p.in_channels, tr, channels, rows);
    float* out = p.dst + (at.n * p.groups + at.grp) * p.out_channels * out_plane + at.slice * p.out_h() * p.out_w();
    transform_output(p, tr, at.range, at.width, channels.begin * kRows, std::min(channels.end * kRows, p.out_channels),
                     out, p.bias ? p.bias + at.grp * p.out_channels : nullptr);
  };

  if (chunks == 1) {
    parallel_for(outer * blocks.count(), 1, [&](std::int64_t begin, std::int64_t end) {
      thread_local std::vector<float> plane_storage, transformed_storage;
      WindowPlanes planes;
      std::vector<std::int64_t> rows;
      for (std::int64_t t = begin; t < end; ++t) {
        const Place at = place(t);
        const Transformed tr = transformed_buffers(at.positions, p.in_channels, out_rows, transformed_storage);
        transform_channels(at, 0, p.in_channels, tr, plane_storage, planes);
        products(at, tr, {0, v[0].blocks()}, rows);
      }
    });
    return;
  }
  // Output channels split into chunks (heavy weights, few positions): each spatial task's input
  // is transformed once, by all cores a share of its channels, into one U that every chunk reads.
  const ScratchLease lease;
  for (std::int64_t t = 0; t < outer * blocks.count(); ++t) {
    const Place at = place(t);
    const Transformed tr = transformed_buffers(at.positions, p.in_channels, out_rows, lease.storage());
    parallel_for(p.in_channels, 16, [&](std::int64_t c0, std::int64_t c1) {
      thread_local std::vector<float> plane_storage;
      WindowPlanes planes;
      transform_channels(at, c0, c1, tr, plane_storage, planes);
    });
    parallel_for(chunks, 1, [&](std::int64_t begin, std::int64_t end) {
      std::vector<std::int64_t> rows;
      for (std::int64_t chunk = begin; chunk < end; ++chunk)
        products(at, tr, chunk_blocks(v[0].blocks(), chunk, chunks), rows);
    });
  }
}

}  // namespace kiln::cpu::conv_detail
