// devices/vulkan private: the window arithmetic the sliding-window kernels share (unfold and
// fold in vk_conv.cpp, the implicit-GEMM convolution in vk_conv_gemm.cpp). Coordinates are
// found by multiply-high divisions (FastDiv) whose constants travel in the argument block; the
// window (padding, stride, dilation, image size per spatial dim, three dims with missing
// leading ones of size 1) travels as six words that GLSL reads back with window_at.
#pragma once
#include <cstdint>

#include "kiln/devices/shape_plans.h"
#include "kiln/devices/vulkan/vk_kernels.h"

namespace kiln::vk {

// Two 32-bit values in one word: lo, then hi.
std::uint64_t window_pair(std::int64_t lo, std::int64_t hi);

// A divisor as two words: (d, magic) and shifts; GLSL reads them with div_at.
LaunchArgs& push_div(LaunchArgs& a, std::int64_t divisor);

// Six words: per spatial dim (padding, stride) and (dilation, image size).
void push_window(LaunchArgs& a, const WindowGeometry& g);

// GLSL (after glsl_fast_div()): struct Div, div_at(word), div_by(n, div) and
// window_at(word, pad, stride, dilation, size).
const char* glsl_window_args();

// Throws (naming `op` and `operand`) where the farthest a window reaches, or its padding, does
// not fit the kernels' 32-bit coordinates.
void check_window_reach(const char* op, const WindowGeometry& g, const TensorIr& operand);

}  // namespace kiln::vk
