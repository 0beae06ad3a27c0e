// Convolutions with small output planes as one product against the packed weights (conv_gemm.h:
// conv_product). The direct kernels vectorize over output positions: a plane of 7 x 7 positions
// (a network's last layers at batch 1) filled 49 of a tile's 96 lanes, and Winograd's 4 x 4 tiles
// of it half its vectors. Here the positions are the product's rows and the output channels its
// vectorized columns: the windows are unfolded into A [k, m] (each of the k = C kh kw rows one
// kernel offset of one channel, over every position of every image), multiplied by the weights
// packed in panels (packed_weights.h, kept with the weight buffer from its second product on, as a
// Linear layer's), and the product [m, K] turned into y [N, K, positions].
#include <algorithm>
#include <cstring>

#include "kiln/devices/cpu/conv_gemm.h"
#include "kiln/devices/cpu/packed_weights.h"
#include "kiln/devices/cpu/parallel.h"

namespace kiln::cpu::conv_detail {

namespace {

// Output planes up to this many positions take the product, where the direct kernels' tiles
// are part junk and their tasks few: resnet18's stride-2 3x3 layers at batch 1, per-layer
// KILN_TRACE on a 2-core EPYC, 28 x 28: 1.03 -> 0.85-0.91 ms, 14 x 14: 1.03 -> 0.78, 7 x 7: 1.30 ->
// 0.78. Stride-1 3x3 layers keep Winograd's fewer multiplies down to 8 x 8 planes: at 7 x 7 its
// tiles waste half their lanes (512 x 512 channels: 1.62 -> 1.30 ms), at 14 x 14 it still wins
// (0.81 against 1.24 as a product).
constexpr std::int64_t kDirectPlane = 1024;
constexpr std::int64_t kWinogradPlane = 64;
// The product's rows at most (the unfolded windows are k x m floats of scratch): a batch of a
// few images; larger batches fill the direct kernels' tiles anyway (resnet18 at batch 16: its
// 7 x 7 layers, 784 rows, about as fast either way).
constexpr std::int64_t kMaxRows = 1024;

// One image's channel with its zero border: (in_h + 2 pad_h) rows of in_w + 2 pad_w.
std::int64_t padded_floats(const ConvGeometry& g) {
  return (g.in[1] + 2 * g.padding[1]) * (g.in[2] + 2 * g.padding[2]);
}

// The rows of A that channel c gives (one per kernel offset, kh kw of them from `dst` on, m
// floats apart): every position of every image. Each image's channel is first copied into the
// inside of `padded` (padded_floats(g) floats whose border is zero), so that the rows are plain
// strided copies.
void unfold_channel(const ConvGeometry& g, const float* x, std::int64_t c, std::int64_t m, float* dst, float* padded) {
  const std::int64_t in_h = g.in[1], in_w = g.in[2], out_h = g.out[1], out_w = g.out[2];
  const std::int64_t pad_h = g.padding[1], pad_w = g.padding[2], width = in_w + 2 * pad_w;
  const std::int64_t plane = out_h * out_w, sy = g.stride[1], sx = g.stride[2];
  for (std::int64_t n = 0; n < g.batch; ++n) {
    const float* src = x + (n * g.channels + c) * in_h * in_w;
    for (std::int64_t iy = 0; iy < in_h; ++iy)
      std::memcpy(padded + (iy + pad_h) * width + pad_w, src + iy * in_w,
                  static_cast<std::size_t>(in_w) * sizeof(float));
    float* row = dst + n * plane;
    for (std::int64_t ky = 0; ky < g.kernel[1]; ++ky) {
      for (std::int64_t kx = 0; kx < g.kernel[2]; ++kx, row += m) {
        const float* from = padded + ky * g.dilation[1] * width + kx * g.dilation[2];
        float* to = row;
        for (std::int64_t oy = 0; oy < out_h; ++oy, to += out_w) {
          const float* line = from + oy * sy * width;
          for (std::int64_t ox = 0; ox < out_w; ++ox) to[ox] = line[ox * sx];
        }
      }
    }
  }
}

}  // namespace

bool conv_product_fits(const ConvGeometry& g, bool winograd) {
  if (g.groups != 1 || g.kernel[0] != 1 || g.in[0] != 1 || g.out[0] != 1) return false;  // 1-D and 2-D, one group
  const std::int64_t plane = g.out[1] * g.out[2];
  return plane <= (winograd ? kWinogradPlane : kDirectPlane) && g.batch * plane <= kMaxRows;
}

void conv_product(const ConvGeometry& g, const float* x, Buffer& weight, const float* bias, float* y) {
  const std::int64_t plane = g.out[1] * g.out[2], m = g.batch * plane, n = g.out_channels;
  const std::int64_t k = g.channels * g.taps();
  const ScratchLease lease;
  std::vector<float>& storage = lease.storage();
  if (storage.size() < static_cast<std::size_t>(k * m + m * n)) storage.resize(static_cast<std::size_t>(k * m + m * n));
  float* a = storage.data();  // [k, m]
  float* c = a + k * m;       // [m, n]
  const std::int64_t taps = g.kernel[1] * g.kernel[2];
  parallel_for(g.channels, std::max<std::int64_t>(1, 4096 / (m * taps)), [&](std::int64_t begin, std::int64_t end) {
    // A thread's own (nothing in a task waits for other tasks), its border zeroed once a task.
    thread_local std::vector<float> padded;
    padded.assign(static_cast<std::size_t>(padded_floats(g)), 0.0f);
    for (std::int64_t ch = begin; ch < end; ++ch) unfold_channel(g, x, ch, m, a + ch * taps * m, padded.data());
  });
  // The weight [K, C kh kw] is B transposed.
  if (const auto packed = packed_weights(weight, n, k, true))
    packed->multiply(m, a, AStrides{1, m}, c, bias);
  else
    packed_product(m, n, k, a, AStrides{1, m}, static_cast<const float*>(weight.data()), c, true, bias);
  // c [N positions, K] -> y [N, K, positions], a block of output channels of one image per task.
  constexpr std::int64_t kChannelBlock = 64;
  const std::int64_t blocks = (n + kChannelBlock - 1) / kChannelBlock;
  parallel_for(g.batch * blocks, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t img = t / blocks, o0 = t % blocks * kChannelBlock, o1 = std::min(n, o0 + kChannelBlock);
      const float* from = c + img * plane * n;
      float* to = y + img * n * plane;
      for (std::int64_t q = 0; q < plane; ++q)
        for (std::int64_t o = o0; o < o1; ++o) to[o * plane + q] = from[q * n + o];
    }
  });
}

}  // namespace kiln::cpu::conv_detail
