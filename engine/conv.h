// Convolution and transposed convolution over 1 to 3 spatial dims, with torch.nn.functional's
// semantics (stride, padding, "same" padding, dilation, groups, output_padding). They run as the
// conv ops (conv; conv_input_grad for a transposed convolution), whose backward rules use the
// conv_input_grad and conv_weight_grad ops. A device without kernels for them runs their
// decompositions (ops/decompositions.h) into unfold / fold (engine/unfold.h) and one matmul: a
// convolution multiplies the weights with the unfolded input; a transposed convolution
// multiplies the transposed weights with the input and folds the columns back into an image.
// The decompositions are also the kernels' test oracle.
#pragma once
#include <cstdint>

#include "kiln/engine/unfold.h"

namespace kiln {

// Window values: one per spatial dim, or one for all of them.
struct ConvOptions {
  Window stride{1};
  Window padding{0};
  Window dilation{1};
  std::int64_t groups = 1;
  // PyTorch's padding='same' (padding is then ignored): the output has the input's size. Needs
  // stride 1; an odd total padding puts the extra zero at the end, as torch does.
  bool same_padding = false;
};

// x [N, C, *spatial] or unbatched [C, *spatial]; weight [K, C / groups, *kernel]; bias [K] or
// undefined. Returns [N, K, *out] (unbatched: [K, *out]).
Tensor conv1d(Tensor x, Tensor weight, Tensor bias = {}, const ConvOptions& o = {});
Tensor conv2d(Tensor x, Tensor weight, Tensor bias = {}, const ConvOptions& o = {});
Tensor conv3d(Tensor x, Tensor weight, Tensor bias = {}, const ConvOptions& o = {});

struct ConvTransposeOptions {
  Window stride{1};
  Window padding{0};
  Window output_padding{0};  // added at the end of each output dim; below stride or dilation
  Window dilation{1};
  std::int64_t groups = 1;
};

// The adjoint of conv: x [N, C, *spatial] or [C, *spatial]; weight [C, K / groups, *kernel];
// bias [K] or undefined. out = (in - 1) stride - 2 padding + dilation (kernel - 1) +
// output_padding + 1 per dim.
Tensor conv_transpose1d(Tensor x, Tensor weight, Tensor bias = {}, const ConvTransposeOptions& o = {});
Tensor conv_transpose2d(Tensor x, Tensor weight, Tensor bias = {}, const ConvTransposeOptions& o = {});
Tensor conv_transpose3d(Tensor x, Tensor weight, Tensor bias = {}, const ConvTransposeOptions& o = {});

}  // namespace kiln
