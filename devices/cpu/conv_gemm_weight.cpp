// conv_weight_grad on the CPU: dw[o, c, tap] = sum over images and positions of dy[o, position]
// times the input that tap reads there, from the same window planes as conv
// (devices/cpu/conv_gemm.h). A tile holds a few reduction rows (channel, tap) by a few vectors of
// output channels in registers and walks the positions one by one: each step broadcasts the rows'
// inputs at that position and multiplies them with dy's output channels there, which a task first
// transposes into position-major order. Junk positions are skipped, never read.
//
// Every sum runs in position order (image, depth, row, column) within one chunk of the images'
// positions; a task owns one chunk and one block of dw, and the chunks' partial sums are added in
// chunk order at the end. Chunks and blocks depend on the shapes alone, so the result does not
// depend on the thread count.
#include <algorithm>
#include <array>
#include <memory>
#include <utility>

#include "kiln/devices/cpu/conv_gemm.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/devices/cpu/simd.h"

namespace kiln::cpu {
namespace {

using conv_detail::AxisTaps;
using conv_detail::ConvGeometry;
using conv_detail::OutputRange;
using conv_detail::PlaneSource;
using conv_detail::WindowPlanes;
using simd::kLanes;
using simd::VF;

// kRows reduction rows by up to kVectors vectors of output channels: 24 accumulators of AVX-512's
// 32 registers, 12 of AVX2's 16, beside the dy vectors and one broadcast.
#if defined(__AVX512F__)
constexpr int kRows = 6, kVectors = 4;
inline VF broadcast(float v) { return reinterpret_cast<VF>(_mm512_set1_ps(v)); }
#else
constexpr int kRows = 4, kVectors = 3;
inline VF broadcast(float v) { return reinterpret_cast<VF>(_mm256_set1_ps(v)); }
#endif

std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// sums[i * ld_sums + v * kLanes + l] += x[offset[i] + r * width + w] * dyt[(r * columns + w) * ld +
// v * kLanes + l] for rows r < rows and columns w < columns, in that order; the sums start from
// zero when `first`.
template <int V>
void weight_tile(const float* x, const std::int64_t* offset, std::int64_t width, const float* dyt, std::int64_t ld,
                 std::int64_t rows, std::int64_t columns, float* sums, std::int64_t ld_sums, bool first) {
  VF acc[kRows][V];
  for (int i = 0; i < kRows; ++i)
    for (int v = 0; v < V; ++v) acc[i][v] = first ? VF{} : simd::load(sums + i * ld_sums + v * kLanes);
  const float* at[kRows];
  for (int i = 0; i < kRows; ++i) at[i] = x + offset[i];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t w = 0; w < columns; ++w, dyt += ld) {
      VF d[V];
      for (int v = 0; v < V; ++v) d[v] = simd::load(dyt + v * kLanes);
      for (int i = 0; i < kRows; ++i) {
        const VF b = broadcast(at[i][r * width + w]);
        for (int v = 0; v < V; ++v) acc[i][v] = simd::fma(b, d[v], acc[i][v]);
      }
    }
  }
  for (int i = 0; i < kRows; ++i)
    for (int v = 0; v < V; ++v) simd::store(sums + i * ld_sums + v * kLanes, acc[i][v]);
}

using WeightTile = void (*)(const float*, const std::int64_t*, std::int64_t, const float*, std::int64_t, std::int64_t,
                            std::int64_t, float*, std::int64_t, bool);
template <std::size_t... I>
constexpr std::array<WeightTile, kVectors> weight_tiles(std::index_sequence<I...>) {
  return {weight_tile<static_cast<int>(I) + 1>...};
}
constexpr std::array<WeightTile, kVectors> kWeightTiles = weight_tiles(std::make_index_sequence<kVectors>{});

// dst[q * ld + o] = src[o * stride + q] for o < outputs, q < positions: 8 x 8 blocks through
// registers, the edges one by one.
void transpose(const float* src, std::int64_t stride, std::int64_t outputs, std::int64_t positions, float* dst,
               std::int64_t ld) {
  const std::int64_t o8 = outputs / 8 * 8, q8 = positions / 8 * 8;
  for (std::int64_t o = 0; o < o8; o += 8) {
    for (std::int64_t q = 0; q < q8; q += 8) {
      __m256 r[8], t[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (o + i) * stride + q);
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
      }
      for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(dst + (q + i) * ld + o, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (q + i + 4) * ld + o, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
      }
    }
    for (std::int64_t i = 0; i < 8; ++i)
      for (std::int64_t q = q8; q < positions; ++q) dst[q * ld + o + i] = src[(o + i) * stride + q];
  }
  for (std::int64_t o = o8; o < outputs; ++o)
    for (std::int64_t q = 0; q < positions; ++q) dst[q * ld + o] = src[o * stride + q];
}

// How the work splits: dw into blocks of `channels` input channels (all their taps) by `outputs`
// output channels; the positions of every image (blocks of outputs, in order) into `chunks` runs,
// each with partial sums of its own.
struct WeightPlan {
  std::int64_t channels = 1, outputs = 1, channel_blocks = 1, output_blocks = 1, chunks = 1;
  conv_detail::TaskBlocks positions;                 // of one image's depth slice
  std::int64_t region_rows = 0, region_columns = 0;  // a block's partial sums, padded to tiles
  std::int64_t blocks(std::int64_t groups) const { return groups * channel_blocks * output_blocks; }
  std::int64_t region() const { return region_rows * region_columns; }
};

WeightPlan weight_plan(const ConvGeometry& g, const AxisTaps& h, const AxisTaps& w) {
  const std::int64_t cg = g.group_channels(), kg = g.group_out_channels(), taps = g.taps();
  WeightPlan p;
  // Up to 576 rows by 64 outputs: a block's sums (144 KiB) stay in L2, the transposed dy of the few
  // rows of positions a tile walks (about 64 positions) in L1.
  p.channels = std::clamp<std::int64_t>(576 / taps, 1, std::max<std::int64_t>(cg, 1));
  p.outputs = std::clamp<std::int64_t>(kg, 1, 64);
  p.channel_blocks = (cg + p.channels - 1) / p.channels;
  p.output_blocks = (kg + p.outputs - 1) / p.outputs;
  p.region_rows = round_up(p.channels * taps, kRows);
  p.region_columns = round_up(p.outputs, kLanes);
  // Blocks of outputs change nothing in the sums, which run on in position order through them.
  const auto planes = p.channels * g.kernel[0] * static_cast<std::int64_t>(h.phases.size() * w.phases.size());
  p.positions = conv_detail::task_blocks(g.out[1], g.out[2], planes, h, w, p.outputs, 1);
  // At least 16 tasks where the positions allow, within 16 MiB of partial sums.
  const std::int64_t blocks = p.blocks(g.groups), runs = g.batch * g.out[0] * p.positions.count();
  const std::int64_t by_memory = std::max<std::int64_t>(1, (std::int64_t{4} << 20) / (blocks * p.region()));
  p.chunks = std::clamp<std::int64_t>((16 + blocks - 1) / blocks, 1, std::min(runs, by_memory));
  return p;
}

}  // namespace

void conv_weight_grad_kernel(const OpIr& op, const KernelArgs& args) {
  const TensorIr& dw_meta = op.outputs[0];
  if (dw_meta.numel() == 0) return;
  KILN_CHECK(dw_meta.dtype == DType::f32, "conv_weight_grad",
             std::string("dtype ") + dtype_name(dw_meta.dtype) + " is not supported on the CPU");
  const ConvGeometry g = conv_detail::conv_geometry(op, op.inputs[1].shape, dw_meta.shape, op.inputs[0].shape);
  const float* dy = in_ptr<float>(args, 0);
  const float* x = in_ptr<float>(args, 1);
  float* dw = out_ptr<float>(args, 0);
  const std::int64_t cg = g.group_channels(), kg = g.group_out_channels(), taps = g.taps();

  const AxisTaps h(g.stride[1], g.in[1], g.displacements(1)), wt(g.stride[2], g.in[2], g.displacements(2));
  const WeightPlan p = weight_plan(g, h, wt);
  const std::int64_t blocks = p.blocks(g.groups), runs = g.batch * g.out[0] * p.positions.count();
  // Each chunk's first pass writes its sums; nothing reads the padding of a region.
  const std::unique_ptr<float[]> partial(new float[static_cast<std::size_t>(p.chunks * blocks * p.region())]);

  parallel_for(p.chunks * blocks, 1, [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> storage;
    std::vector<float> dyt;
    std::vector<std::int64_t> offsets;
    WindowPlanes planes;
    PlaneSource src;
    src.channel_stride = g.in_volume();
    src.slice_size = g.in[1] * g.in[2];
    src.slices.resize(static_cast<std::size_t>(g.kernel[0]));
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t chunk = t / blocks, block = t % blocks;
      const std::int64_t ob = block % p.output_blocks, cb = block / p.output_blocks % p.channel_blocks;
      const std::int64_t grp = block / p.output_blocks / p.channel_blocks;
      const std::int64_t c0 = cb * p.channels, o0 = ob * p.outputs, outputs = std::min(p.outputs, kg - o0);
      const std::int64_t vectors = (outputs + kLanes - 1) / kLanes, ld = vectors * kLanes;
      src.channels = std::min(p.channels, cg - c0);
      const std::int64_t depth = src.channels * taps;
      float* sums = partial.get() + t * p.region();
      const std::int64_t first_run = chunk * runs / p.chunks;
      for (std::int64_t run = first_run; run < (chunk + 1) * runs / p.chunks; ++run) {
        const std::int64_t od = run / p.positions.count() % g.out[0], n = run / p.positions.count() / g.out[0];
        const OutputRange r = p.positions.range(run % p.positions.count(), g.out[1], g.out[2]);
        src.data = x + (n * g.channels + grp * cg + c0) * g.in_volume();
        for (std::int64_t k = 0; k < g.kernel[0]; ++k) {
          const std::int64_t id = od * g.stride[0] + k * g.dilation[0] - g.padding[0];
          src.slices[static_cast<std::size_t>(k)] = id >= 0 && id < g.in[0] ? id : -1;
        }
        conv_detail::build_planes(src, h, wt, r, 0, storage, planes);
        // Reduction rows past the block's end read the first row again; their sums are dropped.
        offsets.assign(planes.offsets.begin(), planes.offsets.end());
        offsets.resize(static_cast<std::size_t>(round_up(depth, kRows)), 0);
        // dy's block, position-major: dyt[position * ld + o], zero past the last output.
        const std::int64_t columns = r.columns(), positions = r.rows() * columns;
        dyt.resize(static_cast<std::size_t>(positions * ld));
        for (std::int64_t q = 0; q < positions && ld > outputs; ++q)
          std::fill(dyt.begin() + q * ld + outputs, dyt.begin() + (q + 1) * ld, 0.0f);
        const float* from = dy + (n * g.out_channels + grp * kg + o0) * g.out_volume() + od * g.out[1] * g.out[2];
        for (std::int64_t u = r.u0; u < r.u1; ++u)
          transpose(from + u * g.out[2] + r.w0, g.out_volume(), outputs, columns,
                    dyt.data() + (u - r.u0) * columns * ld, ld);
        // A few rows of positions at a time: their dy rows stay in L1 for every tile.
        const std::int64_t step = std::max<std::int64_t>(1, 64 / columns);
        for (std::int64_t row = 0; row < r.rows(); row += step) {
          const std::int64_t rows = std::min(step, r.rows() - row);
          for (std::int64_t i = 0; i < depth; i += kRows) {
            for (std::int64_t v = 0; v < vectors; v += kVectors) {
              const auto tile = static_cast<std::size_t>(std::min<std::int64_t>(kVectors, vectors - v) - 1);
              kWeightTiles[tile](planes.data + row * planes.width, &offsets[static_cast<std::size_t>(i)], planes.width,
                                 dyt.data() + row * columns * ld + v * kLanes, ld, rows, columns,
                                 sums + i * p.region_columns + v * kLanes, p.region_columns,
                                 run == first_run && row == 0);
            }
          }
        }
      }
    }
  });

  // dw = the chunks' partial sums, added in chunk order (into the first chunk's), transposed.
  parallel_for(blocks, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t block = begin; block < end; ++block) {
      const std::int64_t ob = block % p.output_blocks, cb = block / p.output_blocks % p.channel_blocks;
      const std::int64_t grp = block / p.output_blocks / p.channel_blocks;
      const std::int64_t c0 = cb * p.channels, channels = std::min(p.channels, cg - c0);
      const std::int64_t o0 = ob * p.outputs, outputs = std::min(p.outputs, kg - o0);
      float* total = partial.get() + block * p.region();
      for (std::int64_t c = 1; c < p.chunks; ++c) {
        const float* more = partial.get() + (c * blocks + block) * p.region();
        for (std::int64_t k = 0; k < channels * taps; ++k)
          for (std::int64_t o = 0; o < outputs; ++o) total[k * p.region_columns + o] += more[k * p.region_columns + o];
      }
      for (std::int64_t o = 0; o < outputs; ++o) {
        float* to = dw + ((grp * kg + o0 + o) * cg + c0) * taps;
        for (std::int64_t k = 0; k < channels * taps; ++k) to[k] = total[k * p.region_columns + o];
      }
    }
  });
}

}  // namespace kiln::cpu
