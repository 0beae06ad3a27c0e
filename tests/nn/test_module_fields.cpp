// KILN_MODULE's list reaches every tensor of every layer the library offers
// (support/module_fields.h says how, and why this is a run-time check).
#include <gtest/gtest.h>

#include <functional>

#include "kiln/nn/nn.h"
#include "support/module_fields.h"

namespace kiln::test {
namespace {

// Each holds a tensor in a field that its KILN_MODULE list leaves out.
struct ForgetsAParameter : nn::Module {
  nn::Linear fc{4, 3};
  nn::Parameter scale{ones({3})};
  KILN_MODULE(ForgetsAParameter, fc)
};
struct ForgetsABuffer : nn::Module {
  nn::Parameter weight{ones({3})};
  nn::Buffer steps{zeros({5})};
  KILN_MODULE(ForgetsABuffer, weight)
};
struct ForgetsALayer : nn::Module {
  nn::Linear kept{4, 3}, forgotten{3, 2};
  KILN_MODULE(ForgetsALayer, kept)
};

TEST(ModuleFields, ALeftOutParameterBufferOrLayerIsFound) {
  EXPECT_FALSE(every_tensor_field_listed([] { return ForgetsAParameter(); }));
  EXPECT_FALSE(every_tensor_field_listed([] { return ForgetsABuffer(); }));
  const ::testing::AssertionResult layer = every_tensor_field_listed([] { return ForgetsALayer(); });
  EXPECT_FALSE(layer);
  EXPECT_NE(std::string(layer.message()).find("ForgetsALayer"), std::string::npos) << layer.message();
}

using Factory = std::function<::testing::AssertionResult()>;
template <class Make> std::pair<const char*, Factory> fields_of(const char* name, Make make) {
  return {name, [make] { return every_tensor_field_listed(make); }};
}

TEST(ModuleFields, EveryLibraryLayerListsEveryTensor) {
  const std::vector<std::pair<const char*, Factory>> layers = {
      fields_of("Linear", [] { return nn::Linear(4, 3); }),
      fields_of("Bilinear", [] { return nn::Bilinear(3, 4, 5); }),
      fields_of("Embedding", [] { return nn::Embedding(6, 3, {.padding_idx = 2}); }),
      fields_of("Flatten", [] { return nn::Flatten(); }),
      fields_of("Conv1d", [] { return nn::Conv1d(4, 6, {3}, {.groups = 2}); }),
      fields_of("Conv2d", [] { return nn::Conv2d(3, 4, {3}); }),
      fields_of("Conv3d", [] { return nn::Conv3d(2, 3, {2}); }),
      fields_of("ConvTranspose1d", [] { return nn::ConvTranspose1d(3, 4, {3}); }),
      fields_of("ConvTranspose2d", [] { return nn::ConvTranspose2d(4, 6, {3}, {.groups = 2}); }),
      fields_of("ConvTranspose3d", [] { return nn::ConvTranspose3d(2, 2, {2}); }),
      fields_of("MaxPool2d", [] { return nn::MaxPool2d({.kernel = {2}}); }),
      fields_of("AdaptiveAvgPool1d", [] { return nn::AdaptiveAvgPool1d({3}); }),
      fields_of("Upsample", [] { return nn::Upsample({4, 4}); }),
      fields_of("BatchNorm1d", [] { return nn::BatchNorm1d(3); }),
      fields_of("BatchNorm2d", [] { return nn::BatchNorm2d(3); }),
      fields_of("LayerNorm", [] { return nn::LayerNorm({3, 4}); }),
      fields_of("GroupNorm", [] { return nn::GroupNorm(2, 4); }),
      fields_of("InstanceNorm1d", [] { return nn::InstanceNorm1d(3, {.affine = true}); }),
      fields_of("InstanceNorm2d", [] { return nn::InstanceNorm2d(3, {.affine = true}); }),
      fields_of("RMSNorm", [] { return nn::RMSNorm({4}); }),
      fields_of("PReLU", [] { return nn::PReLU(3); }),
      fields_of("GELU", [] { return nn::GELU(); }),
      fields_of("Dropout", [] { return nn::Dropout({.p = 0.2}); }),
      fields_of("MultiHeadAttention", [] { return nn::MultiHeadAttention(8, 2); }),
      fields_of("MultiHeadAttention kdim", [] { return nn::MultiHeadAttention(8, 2, {.kdim = 4, .vdim = 6}); }),
      fields_of("TransformerEncoderLayer", [] { return nn::TransformerEncoderLayer(8, 2, {.dim_feedforward = 16}); }),
      fields_of("TransformerDecoderLayer", [] { return nn::TransformerDecoderLayer(8, 2, {.dim_feedforward = 16}); }),
      fields_of("TransformerEncoder",
                [] { return nn::TransformerEncoder(nn::TransformerEncoderLayer(8, 2, {.dim_feedforward = 16}), 2,
                                                   nn::LayerNorm({8})); }),
      fields_of("TransformerDecoder",
                [] { return nn::TransformerDecoder(nn::TransformerDecoderLayer(8, 2, {.dim_feedforward = 16}), 2,
                                                   nn::LayerNorm({8})); }),
      fields_of("LSTM", [] { return nn::LSTM(4, 5, {.num_layers = 2, .bidirectional = true}); }),
      fields_of("GRU", [] { return nn::GRU(4, 5, {.num_layers = 2}); }),
      fields_of("SinusoidalPositionalEncoding", [] { return nn::SinusoidalPositionalEncoding(8, 16); }),
      fields_of("LearnedPositionalEncoding", [] { return nn::LearnedPositionalEncoding(16, 8); }),
      fields_of("RotaryEmbedding", [] { return nn::RotaryEmbedding(8); }),
      fields_of("Sequential", [] { return nn::Sequential(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2)); }),
      fields_of("ModuleList", [] { return nn::ModuleList<nn::Linear>({nn::Linear(2, 3), nn::Linear(3, 4)}); }),
  };
  for (const auto& [name, check] : layers) EXPECT_TRUE(check()) << name;
}

}  // namespace
}  // namespace kiln::test
