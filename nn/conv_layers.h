// Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d, with PyTorch's parameter names
// (weight, bias), weight layouts ([out, in / groups, *kernel]; transposed: [in, out / groups,
// *kernel]) and default initialization. forward is engine/conv.h's op of the same name.
#pragma once
#include "kiln/engine/conv.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

struct ConvLayerOptions {
  Window stride{1};
  Window padding{0};
  Window dilation{1};
  std::int64_t groups = 1;
  bool bias = true;
  bool same_padding = false;  // torch's padding="same" (stride 1)
  Device device = Device::cpu();
};

struct ConvTransposeLayerOptions {
  Window stride{1};
  Window padding{0};
  Window output_padding{0};
  Window dilation{1};
  std::int64_t groups = 1;
  bool bias = true;
  Device device = Device::cpu();
};

namespace detail {
// Shapes and initial values of a convolution's weight and bias; checks the sizes.
struct ConvInit {
  Tensor weight, bias;
};
ConvInit conv_init(const char* layer, std::int64_t in, std::int64_t out, const Window& kernel, int spatial,
                   std::int64_t groups, bool bias, bool transposed, Device device);
std::string conv_describe(const Tensor& weight, bool transposed, const Window& stride, const Window& padding,
                          std::int64_t groups, bool same);
}  // namespace detail

#define KILN_NN_CONV_LAYER(Type)                                                                           \
  class Type : public Module {                                                                             \
   public:                                                                                                 \
    Type(std::int64_t in_channels, std::int64_t out_channels, Window kernel_size,                          \
         const ConvLayerOptions& options = {});                                                            \
    Tensor forward(const Tensor& x) const;                                                                 \
    std::string describe() const override;                                                                \
                                                                                                           \
    Parameter weight, bias;                                                                                \
    KILN_MODULE(Type, weight, bias)                                                                        \
                                                                                                           \
   private:                                                                                                \
    ConvOptions options_;                                                                                  \
  };
KILN_NN_CONV_LAYER(Conv1d)
KILN_NN_CONV_LAYER(Conv2d)
KILN_NN_CONV_LAYER(Conv3d)
#undef KILN_NN_CONV_LAYER

#define KILN_NN_CONV_TRANSPOSE_LAYER(Type)                                                                 \
  class Type : public Module {                                                                             \
   public:                                                                                                 \
    Type(std::int64_t in_channels, std::int64_t out_channels, Window kernel_size,                          \
         const ConvTransposeLayerOptions& options = {});                                                   \
    Tensor forward(const Tensor& x) const;                                                                 \
    std::string describe() const override;                                                                 \
                                                                                                           \
    Parameter weight, bias;                                                                                \
    KILN_MODULE(Type, weight, bias)                                                                        \
                                                                                                           \
   private:                                                                                                \
    ConvTransposeOptions options_;                                                                         \
  };
KILN_NN_CONV_TRANSPOSE_LAYER(ConvTranspose1d)
KILN_NN_CONV_TRANSPOSE_LAYER(ConvTranspose2d)
#undef KILN_NN_CONV_TRANSPOSE_LAYER

}  // namespace kiln::nn
