// Positional encodings against references written in torch (tests/data/gen_nn_attention.py):
// the sinusoid table (float64 in torch, rounded once to f32), learned positions as an
// nn.Embedding looked up at offset positions (outputs and gradients), and rotary embeddings as
// Hugging Face's LLaMA applies them (outputs and input gradients); errors name the layer.
#include <gtest/gtest.h>

#include "nn/attention_cases.h"
#include "kiln/nn/positional.h"

namespace kiln::test {
namespace {

const Tolerance kPositionalTol{1e-5, 1e-6};

std::int64_t config_int(const Json& c, const char* key) { return c.at("config").at(key).get<std::int64_t>(); }

void expect_sinusoidal(const std::string& name, Device device) {
  SCOPED_TRACE(name);
  const Json& c = attention_case(name);
  const nn::SinusoidalPositionalEncoding pos(config_int(c, "d_model"), config_int(c, "max_len"), device);
  expect_state_dict_names(pos, c);
  // Built by kiln, not loaded: the table itself is what is tested.
  EXPECT_TRUE(matches(pos.pe.get(), by_name(c.at("state")).at("pe"), {1e-6, 1e-7}));
  const Tensor x = make_tensor(by_name(c.at("inputs")).at("x"), device);
  EXPECT_TRUE(matches(pos(x, config_int(c, "offset")), c.at("output"), kPositionalTol));
}

TEST(SinusoidalPositionalEncoding, TableAndForwardLikeTorch) {
  expect_sinusoidal("sinusoidal_even", Device::cpu());
  expect_sinusoidal("sinusoidal_odd_offset", Device::cpu());
}

TEST(LearnedPositionalEncoding, ForwardAndGradientsLikeTorch) {
  const Json& c = attention_case("learned_offset");
  const Device cpu = Device::cpu();
  const nn::LearnedPositionalEncoding fresh(config_int(c, "max_len"), config_int(c, "d_model"));
  expect_state_dict_names(fresh, c);
  const nn::LearnedPositionalEncoding pos = load_state(fresh, c, cpu);
  const std::map<std::string, Tensor> in = input_leaves(c, cpu);
  const Tensor out = pos(in.at("x"), config_int(c, "offset"));
  EXPECT_TRUE(matches(out, c.at("output"), kPositionalTol));
  expect_gradients_like_torch(pos, out, in, c, cpu, kPositionalTol);
}

void expect_rotary(const std::string& name, Device device) {
  SCOPED_TRACE(name + " on " + device.str());
  const Json& c = attention_case(name);
  const nn::RotaryEmbedding rope(config_int(c, "head_dim"), c.at("config").at("base").get<double>());
  EXPECT_TRUE(rope.state_dict().empty());
  const std::map<std::string, Tensor> in = input_leaves(c, device);
  const Tensor out = rope(in.at("x"), config_int(c, "offset"));
  EXPECT_TRUE(matches(out, c.at("output"), kPositionalTol));
  expect_gradients_like_torch(rope, out, in, c, device, kPositionalTol);
}

TEST(RotaryEmbedding, ForwardAndGradientsLikeTorch) {
  expect_rotary("rotary_heads", Device::cpu());
  expect_rotary("rotary_offset_base", Device::cpu());
}

class PositionalOnDevices : public ::testing::TestWithParam<Device> {};

TEST_P(PositionalOnDevices, RotaryAndSinusoidal) {
  expect_rotary("rotary_offset_base", GetParam());
  expect_sinusoidal("sinusoidal_odd_offset", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Devices, PositionalOnDevices, ::testing::ValuesIn(test_devices()), device_param_name);

struct Embedder : nn::Module {
  nn::SinusoidalPositionalEncoding sinusoid{8, 16};
  nn::LearnedPositionalEncoding learned{16, 8};
  nn::RotaryEmbedding rope{8};
  KILN_MODULE(Embedder, sinusoid, learned, rope)
};

TEST(PositionalEncodings, ErrorsNameTheLayerAndShapes) {
  EXPECT_NE(error_of([] { nn::RotaryEmbedding(7); }).find("head_dim must be positive and even, got 7"),
            std::string::npos);
  const Embedder m;
  const Tensor x = randn(Shape{2, 10, 8});
  std::string e = error_of([&] { m.sinusoid(x, 7); });
  for (const char* part : {"sinusoid (SinusoidalPositionalEncoding)", "positions 7 .. 17", "[2, 10, 8]", "max_len 16"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = error_of([&] { m.learned(randn(Shape{10, 6})); });
  for (const char* part : {"learned (LearnedPositionalEncoding)", "[..., seq, 8]", "[10, 6]"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = error_of([&] { m.rope(randn(Shape{8})); });
  for (const char* part : {"rope (RotaryEmbedding)", "[..., seq, 8]", "[8]"}) EXPECT_NE(e.find(part), std::string::npos) << e;
  e = error_of([&] { m.rope(x, -1); });
  EXPECT_NE(e.find("offset must be non-negative"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln::test
