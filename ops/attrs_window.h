// Typed attributes of the sliding-window family (unfold, fold, conv, conv_input_grad,
// conv_weight_grad; pooling is unfold underneath). The message carries them as OpAttrs::ints;
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

}  // namespace kiln
