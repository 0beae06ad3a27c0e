// Typed attributes of the sliding-window family (unfold, fold, conv, conv_input_grad,
// conv_weight_grad, max_pool, avg_pool and the pooling gradients). The message carries them as OpAttrs::ints;
// these structs are the one place that knows the order of those ints. The engine encodes, and
// the shape rules, both devices' kernels and autograd's rules decode, so no one indexes ints.
// Decoding allocates nothing (a shape rule runs for every op submitted) and checks the form: a
// malformed message gives a kiln::Error naming the op.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "kiln/ops/ir.h"

namespace kiln {

inline constexpr int kMaxSpatialDims = 3;

// One value per spatial dim; only the first `dims` of the struct that holds it are meaningful.
using Spatial = std::array<std::int64_t, kMaxSpatialDims>;

// "[3, 3]": the first `dims` values, for messages.
std::string spatial_str(const Spatial& v, int dims);

// unfold and fold: ints = [s, kernel[s], dilation[s], padding[s], stride[s]], fold then
// output_size[s]; unfold's pad value in scalar.
struct WindowAttrs {
  int dims = 0;  // s, 1 to 3
  Spatial kernel{}, dilation{}, padding{}, stride{};
  Spatial output_size{};  // fold only
  double pad_value = 0.0;  // unfold only

  // kind is unfold or fold: what follows the window differs.
  OpAttrs encode(OpKind kind) const;
  // Checks the length and that kernel, dilation and stride are positive and padding is not
  // negative (fold's output_size is the shape rule's to check: its message names the columns).
  static WindowAttrs decode(OpKind kind, const OpAttrs& attrs);
  static WindowAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }

  // "kernel [..], dilation [..], padding [..], stride [..]".
  std::string str() const;
  bool operator==(const WindowAttrs&) const = default;
};

// conv, conv_input_grad and conv_weight_grad: ints = [s, stride[s], padding[s], dilation[s],
// groups]; the gradients append the size their operands do not fix, sizes[s]: conv_input_grad
// the input's spatial size, conv_weight_grad the kernel. The kernel of conv and conv_input_grad
// is the weight's [K, C / groups, *kernel].
struct ConvAttrs {
  int dims = 0;  // s, 1 to 3
  Spatial stride{}, padding{}, dilation{};
  std::int64_t groups = 1;
  Spatial sizes{};  // the gradients only

  // Whether op `kind` carries sizes (the two gradients).
  static bool has_sizes(OpKind kind) { return kind != OpKind::conv; }
  OpAttrs encode(OpKind kind) const;
  // Checks the length, positive strides, dilations, groups and sizes, non-negative paddings.
  static ConvAttrs decode(OpKind kind, const OpAttrs& attrs);
  static ConvAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }

  // The same window as unfold and fold see it, with the kernel given (spatial dims of a weight
  // or `sizes`): the gradients on devices without their own kernel run unfold / fold with it.
  WindowAttrs window(const std::int64_t* kernel) const;
  bool operator==(const ConvAttrs&) const = default;
};

// max_pool, avg_pool, max_pool_grad and avg_pool_grad (engine/pool.h): ints = [s, kernel[s],
// stride[s], padding[s], dilation[s], ceil_mode, count_include_pad, with_indices], the gradients
// then input_size[s], the forward's spatial size (dy does not fix it: ceil_mode and the stride
// map several sizes onto one output). dilation is max pooling's (average pooling's is 1),
// count_include_pad average pooling's, with_indices max pooling's: whether it has its second
// output, the i64 indices (autograd's rule needs them; an inference pass does not write them).
inline constexpr int kMaxPoolDims = 2;

struct PoolAttrs {
  int dims = 0;  // s, 1 or 2
  Spatial kernel{}, stride{}, padding{}, dilation{};
  bool ceil_mode = false;
  bool count_include_pad = true;
  bool with_indices = true;
  Spatial input_size{};  // the gradients only

  static bool has_input_size(OpKind kind) { return kind == OpKind::max_pool_grad || kind == OpKind::avg_pool_grad; }
  OpAttrs encode(OpKind kind) const;
  // Checks the length, flags of 0 or 1, positive kernels, strides, dilations (1 for average
  // pooling) and input sizes, and paddings of at most half the kernel (torch's rule).
  static PoolAttrs decode(OpKind kind, const OpAttrs& attrs);
  static PoolAttrs decode(const OpIr& op) { return decode(op.kind, op.attrs); }

  // torch's pooling_output_shape: the windows along dim d of an input of size `in`; below 1 when
  // none fits. With ceil_mode a last, partial window covers the input's end when it starts
  // inside the input or the left padding.
  std::int64_t output_size(int d, std::int64_t in) const;
  // "kernel [..], stride [..], padding [..], dilation [..]" and ", ceil_mode" where set.
  std::string str() const;
  bool operator==(const PoolAttrs&) const = default;
};

}  // namespace kiln
