// Convolution on the CPU: the kernels of conv, conv_input_grad and conv_weight_grad, which never
// build unfold's [N, C kk, L] columns. Each task copies the part of one image that a block of
// outputs reads into a small buffer of the calling thread (`WindowPlanes`: zero padding in place,
// strided sources split by phase) in which every reduction row (channel, kernel offset) is one
// offset from a position and the block's positions are consecutive; tiles of outputs held in
// registers then read it straight from the cache. Stride-1 3x3 convolutions take Winograd's
// F(2x2, 3x3) instead of the direct sums. Private to devices/cpu.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/devices/cpu/cpu_kernels.h"

namespace kiln::cpu {

void conv_kernel(const OpIr& op, const KernelArgs& args);
void conv_input_grad_kernel(const OpIr& op, const KernelArgs& args);
void conv_weight_grad_kernel(const OpIr& op, const KernelArgs& args);

namespace conv_detail {

// A convolution seen over 3 spatial dims (depth, height, width; missing leading dims have size 1):
// x [N, C, *in] * weight [K, C / G, *kernel] -> y [N, K, *out], whichever op runs.
struct ConvGeometry {
  std::int64_t batch = 0, channels = 0, out_channels = 0, groups = 1;
  std::int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  std::int64_t stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};

  std::int64_t group_channels() const { return channels / groups; }          // C / G
  std::int64_t group_out_channels() const { return out_channels / groups; }  // K / G
  std::int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
  std::int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  std::int64_t out_volume() const { return out[0] * out[1] * out[2]; }
  // Per kernel offset along dim d: the input element an output reads, relative to its own position
  // times the stride (k * dilation - padding).
  std::vector<std::int64_t> displacements(int d) const;
};

// From the op's ConvAttrs (ops/attrs_window.h) and the shapes of x, the weight and y.
ConvGeometry conv_geometry(const OpIr& op, const Shape& x, const Shape& weight, const Shape& y);

// The taps along one spatial dim. Output position u reads source element u * stride +
// displacement[t] for tap t, written (u + alpha[t]) * stride + phase: the planes keep each phase of
// a strided source apart, so that consecutive outputs read consecutive plane elements.
struct AxisTaps {
  std::int64_t stride = 1, size = 1;  // of the source along the dim
  std::vector<std::int64_t> alpha;
  std::vector<std::int64_t> plane;   // per tap: the index of its phase among `phases`
  std::vector<std::int64_t> phases;  // the distinct phases the taps read, in order
  std::int64_t lo = 0, hi = 0;       // the least and greatest alpha

  AxisTaps() = default;
  AxisTaps(std::int64_t stride, std::int64_t size, const std::vector<std::int64_t>& displacement);
  std::int64_t count() const { return static_cast<std::int64_t>(alpha.size()); }
  std::int64_t halo() const { return hi - lo; }
};

// What a task's planes are cut from: `channels` channels from `data` on, each of depth slices of
// `slice_size` elements; `slices` names the slice each depth tap reads (-1: zeros).
struct PlaneSource {
  const float* data = nullptr;
  std::int64_t channels = 0, channel_stride = 0, slice_size = 0;
  std::vector<std::int64_t> slices;
};

// A task's outputs: rows [u0, u1) by columns [w0, w1).
struct OutputRange {
  std::int64_t u0 = 0, u1 = 0, w0 = 0, w1 = 0;
  std::int64_t rows() const { return u1 - u0; }
  std::int64_t columns() const { return w1 - w0; }
};

// The B operand of one task: for every source channel, depth tap and pair of phases, a plane of
// `rows` x `width` elements, where output (u0 + r, w0 + w) reads element (r + alpha_h - lo_h) *
// width + (w + alpha_w - lo_w) of its tap's plane. Position q = r * width + w of a block is junk
// where w >= its columns: never stored, never summed. `slack` zeros follow the planes, so that a
// tile may run past the last position.
struct WindowPlanes {
  const float* data = nullptr;
  std::int64_t rows = 0, width = 0;
  std::vector<std::int64_t> offsets;  // per reduction row (channel, depth tap, h tap, w tap)
};

void build_planes(const PlaneSource& src, const AxisTaps& h, const AxisTaps& w, const OutputRange& range,
                  std::int64_t slack, std::vector<float>& storage, WindowPlanes& out);

// How a dim of output rows and columns splits into tasks: each task's planes (`planes` of them,
// plus `extra` floats per output position) within the cache budget, and rows cut into at least
// `min_row_blocks` blocks where there are rows enough.
struct TaskBlocks {
  std::int64_t rows = 1, columns = 1, row_blocks = 1, column_blocks = 1;
  std::int64_t count() const { return row_blocks * column_blocks; }
  OutputRange range(std::int64_t block, std::int64_t out_rows, std::int64_t out_columns) const;
};
TaskBlocks task_blocks(std::int64_t out_rows, std::int64_t out_columns, std::int64_t planes, const AxisTaps& h,
                       const AxisTaps& w, std::int64_t extra, std::int64_t min_row_blocks,
                       std::int64_t budget = 48 << 10);

// Where a convolution's packed weights (`weight_floats` per group) outgrow a core's L2, a task
// that takes every output channel of a few positions reads all of them from memory: a batch of
// one through a network's last layers (resnet18's 512 x 512 x 3 x 3 at 7 x 7, one image) cut
// into row blocks read its 9-17 MB of weights once per block. Such convolutions cut only as the
// cache budget asks, and split the output channels instead: each of `channel_chunks` tasks per
// block reads its share of the weights once. The split depends on the shapes alone: every output
// is still one sum in the same order.
inline constexpr std::int64_t kCachedWeightFloats = 256 << 10;  // 1 MiB
inline bool weights_outgrow_cache(std::int64_t weight_floats) { return weight_floats > kCachedWeightFloats; }
// Chunks of output-channel blocks per spatial task: about 8 tasks in all, at most one a block.
inline std::int64_t channel_chunks(std::int64_t spatial_tasks, std::int64_t channel_blocks) {
  constexpr std::int64_t kTasks = 8;
  return std::clamp<std::int64_t>((kTasks + spatial_tasks - 1) / spatial_tasks, 1, channel_blocks);
}
// Blocks [begin, end) of `blocks` that chunk `chunk` of `chunks` takes.
struct BlockRange {
  std::int64_t begin = 0, end = 0;
};
inline BlockRange chunk_blocks(std::int64_t blocks, std::int64_t chunk, std::int64_t chunks) {
  return {blocks * chunk / chunks, blocks * (chunk + 1) / chunks};
}

// A convolution whose output planes are small (devices/cpu/conv_product.cpp): whether it runs as
// one product of its unfolded windows with the packed weights (`winograd`: whether it could take
// Winograd's algorithm instead), and that product, y = conv(x, the weight in `weight`) + bias.
bool conv_product_fits(const ConvGeometry& g, bool winograd);
void conv_product(const ConvGeometry& g, const float* x, Buffer& weight, const float* bias, float* y);

// Scratch of one call that all cores share (Winograd's U and M on its chunked path, conv_product's
// unfolded windows), lent from a few kept ones: a thread-local would be shared by a call that runs
// nested on this thread while the cores work (the scheduler's tasks are stolen as any), and new
// ones are fresh pages each call.
class ScratchLease {
 public:
  ScratchLease();
  ~ScratchLease();
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  std::vector<float>& storage() const { return storage_; }

 private:
  mutable std::vector<float> storage_;
};

// A stride-1 3x3 convolution (conv's, or conv_input_grad's at stride 1, which is one with the
// kernel flipped) by Winograd's F(2x2, 3x3) (devices/cpu/conv_winograd.cpp): dst[o, u, v] = bias[o]
// + sum over c, a, b < 3 of weights[o, c, a, b] src[c, u + a - pad_h, v + b - pad_w], per group and
// depth slice.
struct PackedWeights;  // conv_tile.h

struct Winograd3x3 {
  const float* src = nullptr;      // [batch, groups * in_channels, slices, in_h, in_w]
  const float* weights = nullptr;  // [groups * out_channels, in_channels, 3, 3]
  // winograd_weights(*this) where the caller keeps them (conv_weights.h); null: made per call.
  const PackedWeights* transformed = nullptr;
  const float* bias = nullptr;  // [groups * out_channels], or none
  float* dst = nullptr;         // [batch, groups * out_channels, slices, out_h, out_w]
  std::int64_t batch = 0, groups = 1, in_channels = 0, out_channels = 0, slices = 1;
  std::int64_t in_h = 0, in_w = 0, pad_h = 0, pad_w = 0;
  std::int64_t out_h() const { return in_h + 2 * pad_h - 2; }
  std::int64_t out_w() const { return in_w + 2 * pad_w - 2; }
};
// Whether the channels are many enough for the transforms to cost little beside the products.
bool winograd_pays(std::int64_t in_channels, std::int64_t out_channels);
// The weights transformed (G g G^T) and packed: groups * 16 products' A operands.
std::vector<PackedWeights> winograd_weights(const Winograd3x3& p);
void winograd_conv3x3(const Winograd3x3& p);

}  // namespace conv_detail

}  // namespace kiln::cpu
