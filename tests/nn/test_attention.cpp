// MultiHeadAttention and scaled_dot_product_attention against torch (tests/data/gen_nn_attention.py):
// state_dict names and shapes, outputs and attention weights with every mask kind, both
// layouts, unbatched inputs and separate key/value sizes, gradients of every parameter and
// input; torch's initialization; dropout only in training; errors that name the layer.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/nn/attention.h"
#include "nn/attention_cases.h"

namespace kiln::test {

namespace {

const Tolerance kAttentionTol{1e-4, 1e-5};

nn::MultiHeadAttention make_attention(const Json& cfg, double dropout = 0.0) {
  nn::MultiHeadAttentionOptions o;
  o.dropout = dropout;
  o.bias = cfg.value("bias", true);
  if (cfg.contains("kdim") && !cfg.at("kdim").is_null()) o.kdim = cfg.at("kdim").get<std::int64_t>();
  if (cfg.contains("vdim") && !cfg.at("vdim").is_null()) o.vdim = cfg.at("vdim").get<std::int64_t>();
  o.batch_first = cfg.value("batch_first", false);
  return nn::MultiHeadAttention(cfg.at("embed_dim").get<std::int64_t>(), cfg.at("num_heads").get<std::int64_t>(), o);
}

struct AttentionRun {
  nn::AttentionOutput result;
  std::map<std::string, Tensor> inputs;
};

// Runs a case's call. A case without "key" attends the query to itself (one tensor passed three
// times); without "value", value is key. With `causal_flag`, a case whose attn_mask is the
// causal mask passes is_causal instead.
AttentionRun run_case(const nn::MultiHeadAttention& m, const Json& c, Device device, bool causal_flag = false) {
  AttentionRun run{{}, input_leaves(c, device)};
  const Tensor& q = run.inputs.at("query");
  const Tensor& k = run.inputs.count("key") ? run.inputs.at("key") : q;
  const Tensor& v = run.inputs.count("value") ? run.inputs.at("value") : k;
  nn::AttentionForwardOptions o;
  o.key_padding_mask = optional_tensor(c.at("key_padding_mask"), device);
  o.attn_mask = causal_flag ? Tensor{} : optional_tensor(c.at("attn_mask"), device);
  o.is_causal = causal_flag;
  o.need_weights = c.at("need_weights").get<bool>();
  o.average_attn_weights = c.at("average").get<bool>();
  run.result = m(q, k, v, o);
  return run;
}

void expect_case_like_torch(const std::string& name, Device device, bool causal_flag = false) {
  SCOPED_TRACE(name + " on " + device.str());
  const Json& c = attention_case(name);
  const nn::MultiHeadAttention m = load_state(make_attention(c.at("config")), c, device);
  const AttentionRun run = run_case(m, c, device, causal_flag);
  EXPECT_TRUE(matches(run.result.output, c.at("output"), kAttentionTol));
  if (c.at("weights").is_null()) {
    EXPECT_FALSE(run.result.weights.defined());
  } else {
    EXPECT_TRUE(matches(run.result.weights, c.at("weights"), kAttentionTol));
  }
  expect_gradients_like_torch(m, run.result.output, run.inputs, c, device, kAttentionTol);
}

const char* const kCases[] = {"mha_self",      "mha_cross_batch_first", "mha_kdim_vdim",
                              "mha_unbatched", "mha_causal_no_bias",    "mha_float_padding"};

TEST(MultiHeadAttentionLikeTorch, StateDictNamesAndShapes) {
  for (const char* name : kCases) {
    const Json& c = attention_case(name);
    expect_state_dict_names(make_attention(c.at("config")), c);
  }
}

class MultiHeadAttentionCase : public ::testing::TestWithParam<const char*> {};

TEST_P(MultiHeadAttentionCase, OutputsWeightsAndGradients) { expect_case_like_torch(GetParam(), Device::cpu()); }

INSTANTIATE_TEST_SUITE_P(Cases, MultiHeadAttentionCase, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param); });

TEST(MultiHeadAttentionLikeTorch, IsCausalEqualsTheCausalMask) {
  expect_case_like_torch("mha_causal_no_bias", Device::cpu(), /*causal_flag=*/true);
}

class MultiHeadAttentionOnDevices : public ::testing::TestWithParam<Device> {};

TEST_P(MultiHeadAttentionOnDevices, SelfAttention) { expect_case_like_torch("mha_self", GetParam()); }

INSTANTIATE_TEST_SUITE_P(Devices, MultiHeadAttentionOnDevices, ::testing::ValuesIn(test_devices()),
                         device_param_name);

// Every value of t lies in [-bound, bound], and its standard deviation is that of U(-bound, bound).
void expect_uniform(const Tensor& t, double bound, const char* what) {
  const std::vector<double> v = host_values(t);
  double sum = 0, sum_sq = 0, largest = 0;
  for (double x : v) {
    sum += x;
    sum_sq += x * x;
    largest = std::max(largest, std::abs(x));
  }
  const double n = static_cast<double>(v.size()), mean = sum / n, sd = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_LE(largest, bound) << what;
  EXPECT_GT(largest, 0.95 * bound) << what;
  EXPECT_NEAR(sd, bound / std::sqrt(3.0), 0.05 * bound / std::sqrt(3.0)) << what;
}

void expect_zeros(const Tensor& t, const char* what) {
  for (double x : host_values(t)) ASSERT_EQ(x, 0.0) << what;
}

TEST(MultiHeadAttention, StartsFromTorchInitialization) {
  manual_seed(7);
  const nn::MultiHeadAttention packed(64, 4);
  // xavier_uniform: bound sqrt(6 / (fan_in + fan_out)); out_proj a Linear: 1 / sqrt(fan_in).
  expect_uniform(packed.in_proj_weight, std::sqrt(6.0 / (64 + 192)), "in_proj_weight");
  expect_uniform(packed.out_proj.weight, 1.0 / 8.0, "out_proj.weight");
  expect_zeros(packed.in_proj_bias, "in_proj_bias");
  expect_zeros(packed.out_proj.bias, "out_proj.bias");

  const nn::MultiHeadAttention separate(64, 4, {.kdim = 32, .vdim = 16});
  expect_uniform(separate.q_proj_weight, std::sqrt(6.0 / (64 + 64)), "q_proj_weight");
  expect_uniform(separate.k_proj_weight, std::sqrt(6.0 / (64 + 32)), "k_proj_weight");
  expect_uniform(separate.v_proj_weight, std::sqrt(6.0 / (64 + 16)), "v_proj_weight");
  EXPECT_FALSE(separate.in_proj_weight.defined());
  const nn::MultiHeadAttention no_bias(8, 2, {.bias = false});
  EXPECT_FALSE(no_bias.in_proj_bias.defined());
  EXPECT_FALSE(no_bias.out_proj.bias.defined());
}

TEST(MultiHeadAttention, DropoutOnlyInTraining) {
  const Json& c = attention_case("mha_self");
  nn::MultiHeadAttention m = load_state(make_attention(c.at("config"), 0.5), c, Device::cpu());
  const Tensor x = make_tensor(by_name(c.at("inputs")).at("query"));
  NoGradGuard no_grad;
  nn::AttentionForwardOptions per_head;
  per_head.average_attn_weights = false;

  m.eval();
  const nn::AttentionOutput eval = m(x, x, x, per_head);
  EXPECT_TRUE(matches(eval.output, c.at("output"), kAttentionTol));

  m.train();
  const nn::AttentionOutput train = m(x, x, x, per_head);
  // Each weight is dropped, or kept and scaled by 1 / (1 - p).
  const std::vector<double> kept = host_values(eval.weights), dropped = host_values(train.weights);
  ASSERT_EQ(kept.size(), dropped.size());
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (dropped[i] == 0.0) {
      ++zeros;
    } else {
      EXPECT_NEAR(dropped[i], 2.0 * kept[i], 1e-6) << i;
    }
  }
  EXPECT_GT(zeros, kept.size() / 5);
  EXPECT_LT(zeros, kept.size() * 4 / 5);
  EXPECT_FALSE(values_close(host_values(train.output), host_values(eval.output), kAttentionTol));
}

struct AttentionBlock : nn::Module {
  nn::MultiHeadAttention attn{8, 2};
  KILN_MODULE(AttentionBlock, attn)
};

TEST(MultiHeadAttention, ErrorsNameTheLayerAndTheShapes) {
  EXPECT_NE(error_of([] { nn::MultiHeadAttention(10, 3); }).find("embed_dim (10) must be divisible by num_heads (3)"),
            std::string::npos);
  const AttentionBlock block;
  const Tensor x = randn(Shape{4, 2, 8});
  const auto call = [&](const nn::AttentionForwardOptions& o, const Tensor& q) {
    return error_of([&] { block.attn(q, x, x, o); });
  };
  std::string e = call({.attn_mask = zeros(Shape{4, 5})}, x);
  for (const char* part : {"attn (MultiHeadAttention)", "attn_mask", "[4, 4] or [4, 4, 4]", "[4, 5]"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = call({.key_padding_mask = from_vector(std::vector<bool>(8, false), Shape{4, 2})}, x);
  for (const char* part : {"attn (MultiHeadAttention)", "key_padding_mask", "[2, 4]", "[4, 2]"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = call({.key_padding_mask = zeros(Shape{2, 4}, TensorOptions{DType::i64})}, x);
  EXPECT_NE(e.find("key_padding_mask must be bool or float"), std::string::npos) << e;
  e = call({}, randn(Shape{4, 2, 6}));
  for (const char* part : {"attn (MultiHeadAttention)", "query [4, 2, 6]", "E = 8"})
    EXPECT_NE(e.find(part), std::string::npos) << e;
  e = call({}, randn(Shape{4, 8}));
  EXPECT_NE(e.find("all unbatched"), std::string::npos) << e;
  e = error_of([&] { block.attn(x, randn(Shape{5, 3, 8}), randn(Shape{5, 3, 8})); });
  EXPECT_NE(e.find("the query's batch size"), std::string::npos) << e;
}

// ---- scaled_dot_product_attention ----

class ScaledDotProductCase : public ::testing::TestWithParam<const char*> {};

TEST_P(ScaledDotProductCase, OutputAndGradients) {
  const Json& c = attention_case(GetParam());
  const Device device = Device::cpu();
  const std::map<std::string, Tensor> in = input_leaves(c, device);
  nn::ScaledDotProductOptions o;
  o.attn_mask = optional_tensor(c.at("attn_mask"), device);
  o.is_causal = c.at("config").at("is_causal").get<bool>();
  if (!c.at("config").at("scale").is_null()) o.scale = c.at("config").at("scale").get<double>();
  const Tensor out = nn::scaled_dot_product_attention(in.at("query"), in.at("key"), in.at("value"), o);
  EXPECT_TRUE(matches(out, c.at("output"), kAttentionTol));
  expect_gradients_like_torch(nn::Identity{}, out, in, c, device, kAttentionTol);
}

INSTANTIATE_TEST_SUITE_P(Cases, ScaledDotProductCase,
                         ::testing::Values("sdpa_bool_mask", "sdpa_causal_scale", "sdpa_float_mask"),
                         [](const auto& info) { return std::string(info.param); });

TEST(ScaledDotProductAttention, Errors) {
  const Tensor q = randn(Shape{2, 3, 4}), k = randn(Shape{2, 5, 4});
  std::string e = error_of([&] { nn::scaled_dot_product_attention(q, k, randn(Shape{2, 4, 4})); });
  EXPECT_NE(e.find("scaled_dot_product_attention: expected query [..., L, D]"), std::string::npos) << e;
  e = error_of([&] {
    nn::scaled_dot_product_attention(q, k, k, {.attn_mask = zeros(Shape{3, 5}), .is_causal = true});
  });
  EXPECT_NE(e.find("is_causal and attn_mask"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln::test
