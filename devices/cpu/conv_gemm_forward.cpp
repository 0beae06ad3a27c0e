// conv and conv_input_grad on the CPU: both are products of packed weights with window planes
// (devices/cpu/conv_gemm.h), one output tile of a few channels by kTile positions in registers
// (devices/cpu/conv_tile.h). conv's tasks are blocks of output rows of one image, group and depth
// slice; it adds the bias as it stores. conv_input_grad is the transposed convolution: split by
// stride phase, each phase of dx is a stride-1 convolution of dy with the kernel offsets that land
// on it (all of them, flipped, when the stride is 1), stored at every stride-th element. Both hand
// stride-1 3x3 convolutions with enough channels to Winograd's algorithm (conv_winograd.cpp).
#include <algorithm>

#include "kiln/devices/cpu/conv_gemm.h"
#include "kiln/devices/cpu/conv_tile.h"
#include "kiln/devices/cpu/conv_weights.h"
#include "kiln/devices/cpu/parallel.h"

namespace kiln::cpu {
namespace {

using conv_detail::AxisTaps;
using conv_detail::ConvGeometry;
using conv_detail::OutputRange;
using conv_detail::PackedWeights;
using conv_detail::PlaneSource;
using conv_detail::TaskBlocks;
using conv_detail::WindowPlanes;
using Form = conv_detail::ConvWeightsLayout::Form;

// Where a task's outputs go: output (row i of the weights, block row r, column w) at base + i *
// channel_stride + r * row_stride + w * column_stride, for r < rows, w < columns.
struct OutputBlock {
  float* base = nullptr;
  std::int64_t channel_stride = 0, row_stride = 0, column_stride = 1, rows = 0, columns = 0;
  const float* bias = nullptr;  // one per weight row, or none
};

// Runs of a tile's positions that are outputs (not junk columns, not past the last row).
struct Segment {
  std::int64_t first, count, dst;
};
int tile_segments(std::int64_t q0, const WindowPlanes& p, const OutputBlock& o, Segment* out) {
  int n = 0;
  std::int64_t r = q0 / p.width, w = q0 % p.width;
  for (std::int64_t j = 0; j < conv_detail::kTile && r < o.rows; r += 1, w = 0) {
    const std::int64_t run = std::min(conv_detail::kTile - j, p.width - w);
    if (w < o.columns) out[n++] = {j, std::min(run, o.columns - w), r * o.row_stride + w * o.column_stride};
    j += run;
  }
  return n;
}

// The outputs of weight row blocks `channels` (all of them by default).
void run_block(const PackedWeights& a, const WindowPlanes& p, const OutputBlock& o,
               conv_detail::BlockRange channels = {0, -1}) {
  alignas(64) float tile[conv_detail::kRows * conv_detail::kTile];
  Segment segments[conv_detail::kTile];
  const std::int64_t positions = o.rows * p.width;
  const std::int64_t last = channels.end < 0 ? a.blocks() : channels.end;
  for (std::int64_t q0 = 0; q0 < positions; q0 += conv_detail::kTile) {
    const int n = tile_segments(q0, p, o, segments);
    for (std::int64_t b = channels.begin; b < last; ++b) {
      const int rows = a.rows_of(b);
      conv_detail::kTileProducts[static_cast<std::size_t>(rows - 1)][conv_detail::kVectors - 1](
          a.block(b), p.data + q0, p.offsets.data(), a.depth, tile, conv_detail::kTile);
      for (int i = 0; i < rows; ++i) {
        const std::int64_t channel = b * conv_detail::kRows + i;
        const float* bias = o.bias ? o.bias + channel : nullptr;
        const float* from = tile + i * conv_detail::kTile;
        float* to = o.base + channel * o.channel_stride;
        for (int s = 0; s < n; ++s) {
          const Segment& g = segments[s];
          if (o.column_stride == 1) {
            conv_detail::store_run(to + g.dst, from + g.first, g.count, bias);
          } else {
            for (std::int64_t k = 0; k < g.count; ++k)
              to[g.dst + k * o.column_stride] = bias ? from[g.first + k] + *bias : from[g.first + k];
          }
        }
      }
    }
  }
}

// A convolution that is stride-1 3x3 in height and width and pointwise in depth, which Winograd's
// F(2x2, 3x3) can run with the given (non-negative) padding.
bool winograd_fits(const ConvGeometry& g, std::int64_t pad_h, std::int64_t pad_w) {
  return g.kernel[0] == 1 && g.padding[0] == 0 && g.stride[0] == 1 && g.kernel[1] == 3 && g.kernel[2] == 3 &&
         g.stride[1] == 1 && g.stride[2] == 1 && g.dilation[1] == 1 && g.dilation[2] == 1 && pad_h >= 0 && pad_w >= 0;
}

}  // namespace

void conv_kernel(const OpIr& op, const KernelArgs& args) {
  const TensorIr& y = op.outputs[0];
  if (y.numel() == 0) return;
  KILN_CHECK(y.dtype == DType::f32, "conv",
             std::string("dtype ") + dtype_name(y.dtype) + " is not supported on the CPU");
  const ConvGeometry g = conv_detail::conv_geometry(op, op.inputs[0].shape, op.inputs[1].shape, y.shape);
  const float* x = in_ptr<float>(args, 0);
  const float* w = in_ptr<float>(args, 1);
  const float* bias = op.inputs.size() > 2 ? in_ptr<float>(args, 2) : nullptr;
  float* out = out_ptr<float>(args, 0);

  const std::int64_t cg = g.group_channels(), kg = g.group_out_channels(), depth = cg * g.taps();
  const bool winograd = winograd_fits(g, g.padding[1], g.padding[2]) && conv_detail::winograd_pays(cg, kg);
  if (conv_detail::conv_product_fits(g, winograd)) return conv_detail::conv_product(g, x, *args.inputs[1], bias, out);
  if (winograd) {
    conv_detail::Winograd3x3 p;
    p.src = x;
    p.weights = w;
    p.bias = bias;
    p.dst = out;
    p.batch = g.batch;
    p.groups = g.groups;
    p.in_channels = cg;
    p.out_channels = kg;
    p.slices = g.in[0];
    p.in_h = g.in[1];
    p.in_w = g.in[2];
    p.pad_h = g.padding[1];
    p.pad_w = g.padding[2];
    const auto transformed = conv_detail::conv_weights(*args.inputs[1], {Form::winograd, g.groups, kg, cg},
                                                       [&] { return conv_detail::winograd_weights(p); });
    p.transformed = transformed->packed().data();
    return conv_detail::winograd_conv3x3(p);
  }

  const auto weights = conv_detail::conv_weights(*args.inputs[1], {Form::direct, g.groups, kg, depth}, [&] {
    std::vector<PackedWeights> packed;
    for (std::int64_t grp = 0; grp < g.groups; ++grp)
      packed.emplace_back(kg, depth, [&](std::int64_t i, std::int64_t r) { return w[(grp * kg + i) * depth + r]; });
    return packed;
  });
  const std::vector<PackedWeights>& packed = weights->packed();

  const AxisTaps h(g.stride[1], g.in[1], g.displacements(1)), wt(g.stride[2], g.in[2], g.displacements(2));
  const std::int64_t planes = cg * g.kernel[0] * static_cast<std::int64_t>(h.phases.size() * wt.phases.size());
  const std::int64_t outer = g.batch * g.groups * g.out[0];
  // Output planes of a few positions (a deep layer at batch 1: 7x7, 14x14) also split the output
  // channels: split by rows, each task held one row of positions (7 of a 16-lane vector) and
  // read all the weights for it. ResNet-18's stride-2 1x1 convolutions at 7x7 and 14x14 (2-core
  // EPYC): 0.49 -> 0.19 ms and 0.23 -> 0.13 ms.
  constexpr std::int64_t kSmallPlane = 256;
  const bool split_channels = conv_detail::weights_outgrow_cache(kg * depth) || g.out[1] * g.out[2] <= kSmallPlane;
  const TaskBlocks blocks =
      conv_detail::task_blocks(g.out[1], g.out[2], planes, h, wt, 0, split_channels ? 1 : (16 + outer - 1) / outer);
  const std::int64_t chunks =
      split_channels ? conv_detail::channel_chunks(outer * blocks.count(), packed[0].blocks()) : 1;

  parallel_for(outer * blocks.count() * chunks, 1, [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> storage;
    WindowPlanes p;
    PlaneSource src;
    src.channels = cg;
    src.channel_stride = g.in_volume();
    src.slice_size = g.in[1] * g.in[2];
    src.slices.resize(static_cast<std::size_t>(g.kernel[0]));
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t chunk = task % chunks, t = task / chunks;
      const std::int64_t block = t % blocks.count(), od = t / blocks.count() % g.out[0];
      const std::int64_t grp = t / blocks.count() / g.out[0] % g.groups, n = t / blocks.count() / g.out[0] / g.groups;
      src.data = x + (n * g.channels + grp * cg) * g.in_volume();
      for (std::int64_t k = 0; k < g.kernel[0]; ++k) {
        const std::int64_t id = od * g.stride[0] + k * g.dilation[0] - g.padding[0];
        src.slices[static_cast<std::size_t>(k)] = id >= 0 && id < g.in[0] ? id : -1;
      }
      const OutputRange r = blocks.range(block, g.out[1], g.out[2]);
      conv_detail::build_planes(src, h, wt, r, conv_detail::kTile + r.columns() + wt.halo(), storage, p);
      OutputBlock o;
      o.base = out + (n * g.out_channels + grp * kg) * g.out_volume() + (od * g.out[1] + r.u0) * g.out[2] + r.w0;
      o.channel_stride = g.out_volume();
      o.row_stride = g.out[2];
      o.rows = r.rows();
      o.columns = r.columns();
      o.bias = bias ? bias + grp * kg : nullptr;
      const PackedWeights& a = packed[static_cast<std::size_t>(grp)];
      run_block(a, p, o, conv_detail::chunk_blocks(a.blocks(), chunk, chunks));
    }
  });
}

void conv_input_grad_kernel(const OpIr& op, const KernelArgs& args) {
  const TensorIr& dx = op.outputs[0];
  if (dx.numel() == 0) return;
  KILN_CHECK(dx.dtype == DType::f32, "conv_input_grad",
             std::string("dtype ") + dtype_name(dx.dtype) + " is not supported on the CPU");
  const ConvGeometry g = conv_detail::conv_geometry(op, dx.shape, op.inputs[1].shape, op.inputs[0].shape);
  const float* dy = in_ptr<float>(args, 0);
  const float* w = in_ptr<float>(args, 1);
  float* out = out_ptr<float>(args, 0);
  const std::int64_t cg = g.group_channels(), kg = g.group_out_channels(), taps = g.taps();
  // At stride 1, dx is the convolution of dy (padded by 2 - padding) with the kernel flipped and
  // its channel dims swapped.
  if (winograd_fits(g, 2 - g.padding[1], 2 - g.padding[2]) && conv_detail::winograd_pays(kg, cg)) {
    std::vector<float> flipped(static_cast<std::size_t>(g.groups * cg * kg * 9));
    for (std::int64_t grp = 0; grp < g.groups; ++grp)
      for (std::int64_t c = 0; c < cg; ++c)
        for (std::int64_t o = 0; o < kg; ++o)
          for (int t = 0; t < 9; ++t)
            flipped[static_cast<std::size_t>(((grp * cg + c) * kg + o) * 9 + t)] =
                w[((grp * kg + o) * cg + c) * 9 + 8 - t];
    conv_detail::Winograd3x3 p;
    p.src = dy;
    p.weights = flipped.data();
    p.dst = out;
    p.batch = g.batch;
    p.groups = g.groups;
    p.in_channels = kg;
    p.out_channels = cg;
    p.slices = g.out[0];
    p.in_h = g.out[1];
    p.in_w = g.out[2];
    p.pad_h = 2 - g.padding[1];
    p.pad_w = 2 - g.padding[2];
    return conv_detail::winograd_conv3x3(p);
  }

  // One phase per (row, column) remainder modulo the stride. A kernel offset k reaches a phase
  // when e = phase + padding - k * dilation is a multiple of the stride, from dy element
  // u + e / stride.
  struct Phase {
    std::int64_t h = 0, w = 0, rows = 0, columns = 0;
    std::vector<std::int64_t> kh, kw;  // the kernel offsets that reach the phase
    AxisTaps taps_h, taps_w;
    std::vector<PackedWeights> packed;  // per group
  };
  const auto reaching = [&](int d, std::int64_t phase, std::vector<std::int64_t>& offsets) {
    std::vector<std::int64_t> displacement;
    for (std::int64_t k = 0; k < g.kernel[d]; ++k) {
      const std::int64_t e = phase + g.padding[d] - k * g.dilation[d];
      if (e % g.stride[d] != 0) continue;
      offsets.push_back(k);
      displacement.push_back(e / g.stride[d]);
    }
    return AxisTaps(1, g.out[d], displacement);
  };
  std::vector<Phase> phases;
  for (std::int64_t ph = 0; ph < std::min(g.stride[1], g.in[1]); ++ph) {
    for (std::int64_t pw = 0; pw < std::min(g.stride[2], g.in[2]); ++pw) {
      Phase p;
      p.h = ph;
      p.w = pw;
      p.rows = (g.in[1] - ph + g.stride[1] - 1) / g.stride[1];
      p.columns = (g.in[2] - pw + g.stride[2] - 1) / g.stride[2];
      p.taps_h = reaching(1, ph, p.kh);
      p.taps_w = reaching(2, pw, p.kw);
      const auto nh = static_cast<std::int64_t>(p.kh.size()), nw = static_cast<std::int64_t>(p.kw.size());
      const std::int64_t depth = kg * g.kernel[0] * nh * nw;
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        p.packed.emplace_back(cg, depth, [&](std::int64_t c, std::int64_t r) {
          const std::int64_t b = r % nw, a = r / nw % nh, kd = r / nw / nh % g.kernel[0], o = r / nw / nh / g.kernel[0];
          const std::int64_t tap = (kd * g.kernel[1] + p.kh[a]) * g.kernel[2] + p.kw[b];
          return w[((grp * kg + o) * cg + c) * taps + tap];
        });
      }
      phases.push_back(std::move(p));
    }
  }

  // Blocks sized for the phase whose planes are widest: the others' are at most as wide.
  const auto widest = std::max_element(phases.begin(), phases.end(), [](const Phase& a, const Phase& b) {
    return a.taps_h.halo() + a.taps_w.halo() < b.taps_h.halo() + b.taps_w.halo();
  });
  const std::int64_t outer = g.batch * g.groups * g.in[0] * static_cast<std::int64_t>(phases.size());
  const TaskBlocks blocks = conv_detail::task_blocks(phases[0].rows, phases[0].columns, kg * g.kernel[0],
                                                     widest->taps_h, widest->taps_w, 0, (16 + outer - 1) / outer);

  parallel_for(outer * blocks.count(), 1, [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> storage;
    WindowPlanes planes;
    PlaneSource src;
    src.channels = kg;
    src.channel_stride = g.out_volume();
    src.slice_size = g.out[1] * g.out[2];
    src.slices.resize(static_cast<std::size_t>(g.kernel[0]));
    const auto np = static_cast<std::int64_t>(phases.size());
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t block = t % blocks.count(), pi = t / blocks.count() % np,
                         id = t / blocks.count() / np % g.in[0];
      const std::int64_t grp = t / blocks.count() / np / g.in[0] % g.groups;
      const std::int64_t n = t / blocks.count() / np / g.in[0] / g.groups;
      const Phase& p = phases[static_cast<std::size_t>(pi)];
      const OutputRange r = blocks.range(block, p.rows, p.columns);
      if (r.rows() <= 0 || r.columns() <= 0) continue;
      src.data = dy + (n * g.out_channels + grp * kg) * g.out_volume();
      for (std::int64_t k = 0; k < g.kernel[0]; ++k) {
        const std::int64_t e = id + g.padding[0] - k * g.dilation[0];
        const bool hit = e % g.stride[0] == 0 && e >= 0 && e / g.stride[0] < g.out[0];
        src.slices[static_cast<std::size_t>(k)] = hit ? e / g.stride[0] : -1;
      }
      conv_detail::build_planes(src, p.taps_h, p.taps_w, r, conv_detail::kTile + r.columns() + p.taps_w.halo(), storage,
                                planes);
      OutputBlock o;
      o.base = out + (n * g.channels + grp * cg) * g.in_volume() + (id * g.in[1] + r.u0 * g.stride[1] + p.h) * g.in[2] +
               r.w0 * g.stride[2] + p.w;
      o.channel_stride = g.in_volume();
      o.row_stride = g.stride[1] * g.in[2];
      o.column_stride = g.stride[2];
      o.rows = r.rows();
      o.columns = r.columns();
      run_block(p.packed[static_cast<std::size_t>(grp)], planes, o);
    }
  });
}

}  // namespace kiln::cpu
