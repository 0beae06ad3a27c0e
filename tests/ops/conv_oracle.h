// The oracle of the CPU's conv ops (devices/cpu/conv_gemm.h): the composites that a device
// without conv kernels runs (ops/decompositions.h) — unfold + matmul for a convolution, matmul +
// fold for a transposed one — built here from the same public ops, and shapes that reach every part of the kernels.
// Shared by the forward suite (tests/ops) and the gradient suite (tests/autograd).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "kiln/engine/kiln.h"

namespace kiln::test {

struct ConvShape {
  std::string name;
  Shape x, weight;
  Window stride{1}, padding{0}, dilation{1};
  std::int64_t groups = 1;
  bool bias = false;

  ConvOptions options() const {
    ConvOptions o;
    o.stride = stride;
    o.padding = padding;
    o.dilation = dilation;
    o.groups = groups;
    return o;
  }
};

// What each shape reaches is in its name; every one of them runs conv, conv_input_grad and
// conv_weight_grad. The CPU kernels' tiles are 8 (4 on AVX2) output channels by 48 (24)
// positions; a task's planes hold up to 48K floats (longer rows are cut into blocks of
// columns) and the rows are cut for 16 tasks (output planes of at most 256 positions, and
// weights past L2, split the output channels instead); the weight gradient's blocks are 576
// reduction rows by 64 output channels. Stride-1 3x3 convolutions with 16 channels or more on
// both sides run by Winograd's F(2x2, 3x3) (the input gradient too, while padding <= 2). The
// forward of a 1-D or 2-D convolution of one group whose output planes are small (at most 1024
// positions, 64 for Winograd's; 1024 rows in the batch) is one product of its unfolded windows
// instead: the shapes meant for the other forward kernels are larger, or 3-D with two slices.
inline std::vector<ConvShape> conv_shapes() {
  return {
      {"rows_in_blocks_channels_in_tiles", {2, 16, 20, 23}, {21, 16, 3, 3}, {1}, {1}, {1}, 1, true},
      {"stride2_four_phases", {2, 12, 2, 17, 15}, {20, 12, 1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1}, 1, false},
      {"stride2_rows_cut_for_tasks", {1, 8, 70, 66}, {12, 8, 3, 3}, {2}, {1}, {1}, 1, true},
      {"stem_7x7_stride2", {1, 3, 32, 30}, {16, 3, 7, 7}, {2}, {3}, {1}, 1, true},
      {"pointwise_stride2_two_output_blocks", {2, 40, 9, 11}, {72, 40, 1, 1}, {2}, {0}, {1}, 1, false},
      {"pointwise", {3, 24, 8, 9}, {10, 24, 1, 1}, {1}, {0}, {1}, 1, true},
      {"two_channel_blocks", {1, 80, 2, 6, 7}, {70, 80, 1, 3, 3}, {1}, {0, 1, 1}, {1}, 1, true},
      {"groups_dilation_mixed_stride", {2, 12, 13, 14}, {18, 4, 3, 2}, {1, 2}, {2, 1}, {2, 3}, 3, true},
      {"depthwise", {2, 8, 11, 12}, {8, 1, 3, 3}, {1}, {1}, {1}, 8, false},
      {"stride_above_kernel", {1, 5, 14, 16}, {6, 5, 2, 2}, {3}, {0}, {1}, 1, true},
      {"padding_above_kernel", {1, 3, 5, 6}, {4, 3, 3, 3}, {1}, {4}, {1}, 1, false},
      {"valid_unpadded", {2, 6, 9, 10}, {5, 6, 3, 4}, {1}, {0}, {1}, 1, true},
      {"winograd_odd_sizes_padding2", {2, 16, 9, 11}, {20, 16, 3, 3}, {1}, {2}, {1}, 1, true},
      {"winograd_unpadded_depth_slices", {1, 16, 3, 7, 8}, {17, 16, 1, 3, 3}, {1}, {0}, {1}, 1, false},
      {"winograd_groups_column_blocks", {1, 32, 4, 700}, {32, 16, 3, 3}, {1}, {1}, {1}, 2, true},
      {"winograd_forward_padding3", {1, 16, 6, 6}, {16, 16, 3, 3}, {1}, {3}, {1}, 1, false},
      // Weights past a core's L2 (devices/cpu/conv_gemm.h: weights_outgrow_cache): the tasks split
      // the output channels, unevenly here, and Winograd's input transform is shared by them.
      {"winograd_weights_past_l2_channel_chunks", {1, 160, 2, 6, 7}, {168, 160, 1, 3, 3}, {1}, {0, 1, 1}, {1}, 1, true},
      {"direct_weights_past_l2_chunks", {1, 128, 2, 9, 9}, {264, 128, 1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1}, 1, false},
      {"conv1d_groups", {3, 6, 50}, {10, 3, 5}, {2}, {2}, {2}, 2, true},
      {"conv1d_rows_in_column_blocks", {1, 64, 1100}, {96, 64, 3}, {1}, {1}, {1}, 1, true},
      {"conv1d_strided_column_blocks", {1, 32, 3000}, {40, 32, 5}, {2}, {2}, {1}, 1, false},
      {"conv3d_depth_stride", {2, 4, 6, 7, 8}, {6, 4, 3, 3, 3}, {2, 1, 1}, {1}, {1}, 1, true},
      // One product of the unfolded windows with the packed weights (devices/cpu/conv_product.cpp):
      // 1-D and 2-D convolutions of one group whose output planes are small. Here a stride-1 3x3
      // plane of 7 x 7 with k = 576 (the sum in two stretches per core) and 40 output channels
      // (the last panel part padding), and strides, dilations and padding past the kernel.
      {"product_7x7_plane_k_in_stretches", {2, 64, 7, 7}, {40, 64, 3, 3}, {1}, {1}, {1}, 1, true},
      {"product_dilated_strided_padded", {1, 6, 19, 17}, {10, 6, 3, 3}, {2}, {3}, {2}, 1, true},
  };
}

// Inputs of about unit size: x and the bias normal, the weight scaled by 1 / sqrt(fan-in).
inline std::vector<Tensor> conv_inputs(const ConvShape& s, Generator& gen) {
  std::int64_t fan_in = 1;
  for (int d = 1; d < s.weight.rank(); ++d) fan_in *= s.weight[d];
  std::vector<Tensor> in{randn(s.x, gen), mul(randn(s.weight, gen), 1.0 / std::sqrt(double(fan_in)))};
  if (s.bias) in.push_back(randn(Shape{s.weight[0]}, gen));
  return in;
}

// conv through unfold + matmul: [G, K/G, C/G kk] @ [N, G, C/G kk, L], then the bias.
inline Tensor composite_conv(const ConvShape& s, const std::vector<Tensor>& in) {
  const Tensor& x = in.at(0);
  const Tensor& w = in.at(1);
  const std::int64_t n = x.size(0), k = w.size(0), g = s.groups;
  const Window kernel(w.shape().begin() + 2, w.shape().end());
  Tensor cols = unfold(x, kernel, s.dilation, s.padding, s.stride);
  const std::int64_t depth = cols.size(1) / g, windows = cols.size(2);
  Tensor y = matmul(reshape(w, {g, k / g, depth}), reshape(std::move(cols), {n, g, depth, windows}));
  y = reshape(std::move(y), {n, k, windows});
  if (in.size() > 2) y = add(std::move(y), reshape(in[2], {k, 1}));
  return y;
}

// The same through conv1d/2d/3d, which take the CPU's conv op; flattened to [N, K, L].
inline Tensor api_conv(const ConvShape& s, const std::vector<Tensor>& in) {
  const Tensor bias = in.size() > 2 ? in[2] : Tensor{};
  Tensor y;
  switch (s.x.rank()) {
    case 3: y = conv1d(in.at(0), in.at(1), bias, s.options()); break;
    case 4: y = conv2d(in.at(0), in.at(1), bias, s.options()); break;
    default: y = conv3d(in.at(0), in.at(1), bias, s.options()); break;
  }
  const std::int64_t n = y.size(0), k = y.size(1);
  return reshape(std::move(y), {n, k, -1});
}

// Transposed convolutions, which the CPU runs as one conv_input_grad op (output_padding below
// the stride, as here).
struct ConvTransposeShape {
  std::string name;
  Shape x, weight;  // weight [C, K / groups, *kernel]
  Window stride{1}, padding{0}, output_padding{0}, dilation{1};
  std::int64_t groups = 1;
  bool bias = false;
};

inline std::vector<ConvTransposeShape> conv_transpose_shapes() {
  return {
      {"upsample_4x4_stride2", {2, 16, 9, 11}, {16, 12, 4, 4}, {2}, {1}, {0}, {1}, 1, true},
      {"stride2_output_padding", {1, 10, 7, 8}, {10, 6, 3, 3}, {2}, {1}, {1}, {1}, 1, false},
      {"groups_dilation", {2, 6, 6, 5}, {6, 4, 3, 2}, {1, 2}, {0, 1}, {0, 1}, {2, 1}, 2, true},
      {"pointwise", {2, 20, 5, 6}, {20, 70, 1, 1}, {1}, {0}, {0}, {1}, 1, false},
      {"conv1d_stride3", {2, 8, 40}, {8, 5, 4}, {3}, {2}, {2}, {1}, 1, true},
  };
}

inline std::vector<Tensor> conv_transpose_inputs(const ConvTransposeShape& s, Generator& gen) {
  std::int64_t fan_in = s.weight[0] / s.groups;
  for (int d = 2; d < s.weight.rank(); ++d) fan_in *= s.weight[d];
  std::vector<Tensor> in{randn(s.x, gen), mul(randn(s.weight, gen), 1.0 / std::sqrt(double(fan_in)))};
  if (s.bias) in.push_back(randn(Shape{s.weight[1] * s.groups}, gen));
  return in;
}

// [G, K/G kk, C/G] @ [N, G, C/G, L] -> columns, folded into the output; flattened to [N, K, L].
inline Tensor composite_conv_transpose(const ConvTransposeShape& s, const std::vector<Tensor>& in) {
  const Tensor& x = in.at(0);
  const Tensor& w = in.at(1);
  const std::int64_t n = x.size(0), c = x.size(1), g = s.groups, k = w.size(1) * g;
  const int dims = x.rank() - 2;
  const Window kernel(w.shape().begin() + 2, w.shape().end());
  std::int64_t kk = 1, windows = 1;
  Window out(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) {
    const auto at = [d](const Window& v) { return v[v.size() == 1 ? 0 : static_cast<std::size_t>(d)]; };
    kk *= kernel[static_cast<std::size_t>(d)];
    windows *= x.size(2 + d);
    out[static_cast<std::size_t>(d)] = (x.size(2 + d) - 1) * at(s.stride) - 2 * at(s.padding) +
                                       at(s.dilation) * (kernel[static_cast<std::size_t>(d)] - 1) +
                                       at(s.output_padding) + 1;
  }
  Tensor wt = transpose(reshape(w, {g, c / g, k / g * kk}), 1, 2);
  Tensor cols = reshape(matmul(std::move(wt), reshape(x, {n, g, c / g, windows})), {n, k * kk, windows});
  Tensor y = reshape(fold(std::move(cols), out, kernel, s.dilation, s.padding, s.stride), {n, k, -1});
  if (in.size() > 2) y = add(std::move(y), reshape(in[2], {k, 1}));
  return y;
}

inline Tensor api_conv_transpose(const ConvTransposeShape& s, const std::vector<Tensor>& in) {
  ConvTransposeOptions o;
  o.stride = s.stride;
  o.padding = s.padding;
  o.output_padding = s.output_padding;
  o.dilation = s.dilation;
  o.groups = s.groups;
  const Tensor bias = in.size() > 2 ? in[2] : Tensor{};
  Tensor y =
      s.x.rank() == 3 ? conv_transpose1d(in.at(0), in.at(1), bias, o) : conv_transpose2d(in.at(0), in.at(1), bias, o);
  const std::int64_t n = y.size(0), k = y.size(1);
  return reshape(std::move(y), {n, k, -1});
}

}  // namespace kiln::test
