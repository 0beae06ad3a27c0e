// Transformer layers and stacks against torch's (tests/data/gen_nn_attention.py): state_dict
// names and shapes, outputs and every parameter's and input's gradient, post- and pre-norm, relu
// and gelu, both layouts, every mask kind; dropout off in eval mode and on in training; deep
// copies of the layer in the stacks; errors that name the layer's path.
#include <gtest/gtest.h>

#include "nn/attention_cases.h"
#include "kiln/nn/transformer.h"

namespace kiln::test {
namespace {

const Tolerance kTransformerTol{1e-4, 1e-5};

nn::TransformerLayerOptions layer_options(const Json& cfg, double dropout) {
  nn::TransformerLayerOptions o;
  o.dim_feedforward = cfg.at("dim_feedforward").get<std::int64_t>();
  o.dropout = dropout;
  o.activation = cfg.at("activation") == "gelu" ? nn::TransformerActivation::gelu : nn::TransformerActivation::relu;
  o.layer_norm_eps = cfg.at("layer_norm_eps").get<double>();
  o.batch_first = cfg.at("batch_first").get<bool>();
  o.norm_first = cfg.at("norm_first").get<bool>();
  return o;
}

std::int64_t d_model(const Json& cfg) { return cfg.at("d_model").get<std::int64_t>(); }
std::int64_t nhead(const Json& cfg) { return cfg.at("nhead").get<std::int64_t>(); }

std::optional<nn::LayerNorm> final_norm(const Json& cfg) {
  if (!cfg.at("final_norm").get<bool>()) return std::nullopt;
  return nn::LayerNorm({d_model(cfg)}, cfg.at("layer_norm_eps").get<double>());
}

nn::TransformerEncoderLayer encoder_layer(const Json& cfg, double dropout) {
  return nn::TransformerEncoderLayer(d_model(cfg), nhead(cfg), layer_options(cfg, dropout));
}
nn::TransformerDecoderLayer decoder_layer(const Json& cfg, double dropout) {
  return nn::TransformerDecoderLayer(d_model(cfg), nhead(cfg), layer_options(cfg, dropout));
}

// How a case runs: with the masks torch was given, or with is_causal in place of a causal
// mask; in training mode without dropout, or in eval mode with dropout 0.1 (which must then
// do nothing).
struct Mode {
  bool causal_flag;
  double dropout;
  bool training;
};

template <class M>
Tensor call(const M& m, const Json& c, const std::map<std::string, Tensor>& in, Device device, bool causal_flag) {
  const Json& masks = c.at("masks");
  const bool flag = causal_flag && c.at("config").at("causal").get<bool>();
  const auto mask = [&](const char* name) { return optional_tensor(masks.at(name), device); };
  if constexpr (std::is_same_v<M, nn::TransformerEncoderLayer> || std::is_same_v<M, nn::TransformerEncoder>) {
    return m(in.at("src"), flag ? Tensor{} : mask("src_mask"), mask("src_key_padding_mask"), flag);
  } else {
    return m(in.at("tgt"), in.at("memory"), flag ? Tensor{} : mask("tgt_mask"), mask("memory_mask"),
             mask("tgt_key_padding_mask"), mask("memory_key_padding_mask"), flag);
  }
}

template <class M> void expect_like_torch(const M& fresh, const Json& c, Device device, Mode mode) {
  M m = load_state(fresh, c, device);
  m.train(mode.training);
  const std::map<std::string, Tensor> in = input_leaves(c, device);
  const Tensor out = call(m, c, in, device, mode.causal_flag);
  EXPECT_TRUE(matches(out, c.at("output"), kTransformerTol));
  expect_gradients_like_torch(m, out, in, c, device, kTransformerTol);
}

// Builds the case's module (dropout as given) and applies `check` to it.
template <class F> void with_module(const Json& c, double dropout, F&& check) {
  const Json& cfg = c.at("config");
  const std::string kind = c.at("kind");
  if (kind == "encoder_layer") {
    check(encoder_layer(cfg, dropout));
  } else if (kind == "encoder") {
    check(nn::TransformerEncoder(encoder_layer(cfg, dropout), cfg.at("num_layers").get<std::int64_t>(), final_norm(cfg)));
  } else if (kind == "decoder_layer") {
    check(decoder_layer(cfg, dropout));
  } else {
    ASSERT_EQ(kind, "decoder");
    check(nn::TransformerDecoder(decoder_layer(cfg, dropout), cfg.at("num_layers").get<std::int64_t>(), final_norm(cfg)));
  }
}

void expect_case_like_torch(const std::string& name, Device device, Mode mode) {
  SCOPED_TRACE(name + " on " + device.str());
  const Json& c = attention_case(name);
  with_module(c, mode.dropout, [&](const auto& m) { expect_like_torch(m, c, device, mode); });
}

const char* const kCases[] = {"encoder_layer_post_relu", "encoder_layer_pre_gelu", "encoder_stack",
                              "decoder_layer_post",      "decoder_layer_pre_gelu", "decoder_stack"};

TEST(TransformerLikeTorch, StateDictNamesAndShapes) {
  for (const char* name : kCases) {
    const Json& c = attention_case(name);
    with_module(c, 0.1, [&](const auto& m) { expect_state_dict_names(m, c); });
  }
}

class TransformerCase : public ::testing::TestWithParam<const char*> {};

TEST_P(TransformerCase, TrainingWithoutDropout) {
  expect_case_like_torch(GetParam(), Device::cpu(), {.causal_flag = false, .dropout = 0.0, .training = true});
}

TEST_P(TransformerCase, EvalWithDropoutAndTheCausalFlag) {
  expect_case_like_torch(GetParam(), Device::cpu(), {.causal_flag = true, .dropout = 0.1, .training = false});
}

INSTANTIATE_TEST_SUITE_P(Cases, TransformerCase, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param); });

class TransformerOnDevices : public ::testing::TestWithParam<Device> {};

TEST_P(TransformerOnDevices, EncoderLayer) {
  expect_case_like_torch("encoder_layer_post_relu", GetParam(), {.causal_flag = false, .dropout = 0.0, .training = true});
}

INSTANTIATE_TEST_SUITE_P(Devices, TransformerOnDevices, ::testing::ValuesIn(test_devices()), device_param_name);

TEST(Transformer, DropoutActsInTraining) {
  const Json& c = attention_case("encoder_layer_post_relu");
  nn::TransformerEncoderLayer layer = load_state(encoder_layer(c.at("config"), 0.1), c, Device::cpu());
  const Tensor src = make_tensor(by_name(c.at("inputs")).at("src"));
  NoGradGuard no_grad;
  const Tensor train_out = layer(src);
  layer.eval();
  const Tensor eval_out = layer(src);
  EXPECT_FALSE(values_close(host_values(train_out), host_values(eval_out), kTransformerTol));
}

TEST(Transformer, StacksHoldDeepCopies) {
  const nn::TransformerEncoderLayer layer(8, 2, {.dim_feedforward = 16});
  const nn::TransformerEncoder encoder(layer, 3, nn::LayerNorm({8}));
  ASSERT_EQ(encoder.layers.size(), 3u);
  const std::vector<nn::NamedTensor> state = encoder.state_dict();
  EXPECT_EQ(state.front().name, "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(state.back().name, "norm.bias");
  const Tensor& original = layer.linear1.weight;
  for (std::size_t i = 0; i < 3; ++i) {
    const Tensor& copy = encoder.layers[i].linear1.weight;
    EXPECT_NE(copy.id(), original.id());
    if (i > 0) {
      EXPECT_NE(copy.id(), encoder.layers[i - 1].linear1.weight.value().id());
    }
    EXPECT_TRUE(values_close(host_values(copy), host_values(original), {0, 0}));
  }
  EXPECT_EQ(encoder.layers[2].self_attn.out_proj.path(), "layers.2.self_attn.out_proj");
}

struct Seq2Seq : nn::Module {
  nn::TransformerEncoder encoder{nn::TransformerEncoderLayer(8, 2, {.dim_feedforward = 16}), 2};
  nn::TransformerDecoder decoder{nn::TransformerDecoderLayer(8, 2, {.dim_feedforward = 16}), 2};
  KILN_MODULE(Seq2Seq, encoder, decoder)
};

TEST(Transformer, ErrorsNameTheLayerPathAndShapes) {
  EXPECT_NE(error_of([] { nn::TransformerEncoderLayer(10, 3); }).find("must be divisible by num_heads (3)"),
            std::string::npos);
  EXPECT_NE(error_of([] { nn::TransformerEncoder(nn::TransformerEncoderLayer(8, 2), 0); }).find("num_layers"),
            std::string::npos);
  const Seq2Seq model;
  const Tensor src = randn(Shape{5, 2, 8}), tgt = randn(Shape{3, 2, 8});
  std::string e = error_of([&] { model.encoder(src, zeros(Shape{5, 4})); });
  for (const char* part : {"encoder.layers.0.self_attn (MultiHeadAttention)", "attn_mask", "[5, 4]"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = error_of([&] { model.encoder(randn(Shape{5, 2, 6})); });
  for (const char* part : {"encoder.layers.0 (TransformerEncoderLayer)", "src", "[5, 2, 6]"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = error_of([&] { model.decoder(tgt, src, Tensor{}, Tensor{}, Tensor{}, from_vector(std::vector<bool>(8, false), Shape{2, 4})); });
  for (const char* part : {"decoder.layers.0.multihead_attn (MultiHeadAttention)", "key_padding_mask", "[2, 5]"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = error_of([&] { model.decoder(tgt, randn(Shape{5, 2, 4})); });
  for (const char* part : {"decoder.layers.0 (TransformerDecoderLayer)", "memory", "[5, 2, 4]"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln::test
