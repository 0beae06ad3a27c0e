// Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, with PyTorch's parameter names
// (weight, bias), weight layouts ([out, in / groups, *kernel]; transposed: [in, out / groups,
// *kernel]) and default initialization. forward is engine/conv.h's op of the same name.
//
// Each kind is one class template over the number of spatial dims (ConvNd<D>,
// ConvTransposeNd<D>), so the dims cannot drift apart; Conv2d and the others name its
// instances, and each instance reports its PyTorch name (summaries, errors).
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

// A convolution over D spatial dims: x [N, in_channels, *D] or [in_channels, *D].
template <int D> class ConvNd : public Module {
  static_assert(D >= 1 && D <= 3, "convolutions have 1 to 3 spatial dims");

 public:
  using Options = ConvLayerOptions;
  // kernel_size: one value per spatial dim, or one for all.
  ConvNd(std::int64_t in_channels, std::int64_t out_channels, Window kernel_size,
         const ConvLayerOptions& options = {});
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;

  Parameter weight, bias;
  KILN_MODULE(ConvNd, weight, bias)

 private:
  ConvOptions options_;
};

// The adjoint of ConvNd over D spatial dims (a "deconvolution").
template <int D> class ConvTransposeNd : public Module {
  static_assert(D >= 1 && D <= 3, "transposed convolutions have 1 to 3 spatial dims");

 public:
  using Options = ConvTransposeLayerOptions;
  ConvTransposeNd(std::int64_t in_channels, std::int64_t out_channels, Window kernel_size,
                  const ConvTransposeLayerOptions& options = {});
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;

  Parameter weight, bias;
  KILN_MODULE(ConvTransposeNd, weight, bias)

 private:
  ConvTransposeOptions options_;
};

using Conv1d = ConvNd<1>;
using Conv2d = ConvNd<2>;
using Conv3d = ConvNd<3>;
using ConvTranspose1d = ConvTransposeNd<1>;
using ConvTranspose2d = ConvTransposeNd<2>;
using ConvTranspose3d = ConvTransposeNd<3>;

namespace detail {
template <int D> struct ModuleTypeName<ConvNd<D>> {
  static constexpr const char* value = D == 1 ? "Conv1d" : D == 2 ? "Conv2d" : "Conv3d";
};
template <int D> struct ModuleTypeName<ConvTransposeNd<D>> {
  static constexpr const char* value = D == 1 ? "ConvTranspose1d" : D == 2 ? "ConvTranspose2d" : "ConvTranspose3d";
};
}  // namespace detail

// Compiled once, in nn/conv.cpp.
extern template class ConvNd<1>;
extern template class ConvNd<2>;
extern template class ConvNd<3>;
extern template class ConvTransposeNd<1>;
extern template class ConvTransposeNd<2>;
extern template class ConvTransposeNd<3>;

}  // namespace kiln::nn
