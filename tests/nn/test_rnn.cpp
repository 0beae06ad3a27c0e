// LSTM and GRU against torch.nn.LSTM and torch.nn.GRU (tests/data/gen_nn_rnn.py): state_dict
// names, shapes and order; outputs and final states; the gradients of every parameter, of the
// input and of the initial states; dropout between layers; errors naming the layer.
#include <gtest/gtest.h>


#include "nn/module_cases.h"
#include "kiln/nn/rnn.h"

namespace kiln::test {
namespace {

const Json& rnn_case(const std::string& name) { return nn_case("nn_rnn.json", name); }

// A fresh layer built with the case's settings (torch's defaults where the case has none).
template <class M> M layer_for(const Json& c) {
  const Json& cfg = c.at("config");
  nn::RNNOptions o;
  o.num_layers = cfg.value("num_layers", 1);
  o.bias = cfg.value("bias", true);
  o.batch_first = cfg.value("batch_first", false);
  o.dropout = cfg.value("dropout", 0.0);
  o.bidirectional = cfg.value("bidirectional", false);
  return M(cfg.at("input_size").get<std::int64_t>(), cfg.at("hidden_size").get<std::int64_t>(), o);
}

struct Run {
  Tensor output, h_n, c_n;
};
// The case's initial states are under "h0" and "c0" when it has them.
Run run(const nn::LSTM& m, const Tensor& x, const std::map<std::string, Tensor>& leaves) {
  std::optional<nn::LSTMState> initial;
  if (leaves.count("h0")) initial = nn::LSTMState{leaves.at("h0"), leaves.at("c0")};
  auto [y, state] = m(x, initial);
  return {y, state.h, state.c};
}
Run run(const nn::GRU& m, const Tensor& x, const std::map<std::string, Tensor>& leaves) {
  auto [y, h_n] = m(x, leaves.count("h0") ? leaves.at("h0") : Tensor{});
  return {y, h_n, Tensor{}};
}

template <class M> void expect_state_dict_like_torch(const std::string& name) {
  const Json& c = rnn_case(name);
  expect_state_dict_names(layer_for<M>(c), c);
}

// Output and final states; gradients of sum(seed * output) + sum(seed_h * h_n) [+ c_n] for
// every parameter, the input and the initial states; the eval-mode output when torch gave one.
template <class M> void expect_like_torch(const std::string& name, Device device) {
  const Json& c = rnn_case(name);
  const M model = load_state(layer_for<M>(c), c, device);
  std::map<std::string, Tensor> leaves;
  for (const auto& [k, t] : by_name(c.at("inputs"))) leaves[k] = require_grad(make_tensor(t, device));
  const Run r = run(model, leaves.at("input"), leaves);

  const Tolerance tol{1e-4, 1e-5};
  const std::map<std::string, Json> want = by_name(c.at("outputs"));
  const std::map<std::string, Json> seeds = by_name(c.at("seeds"));
  EXPECT_TRUE(matches(r.output, want.at("output"), tol)) << "output";
  EXPECT_TRUE(matches(r.h_n, want.at("h_n"), tol)) << "h_n";
  Tensor loss = add(sum(mul(r.output, make_tensor(seeds.at("output"), device))),
                    sum(mul(r.h_n, make_tensor(seeds.at("h_n"), device))));
  if (want.count("c_n")) {
    EXPECT_TRUE(matches(r.c_n, want.at("c_n"), tol)) << "c_n";
    loss = add(std::move(loss), sum(mul(r.c_n, make_tensor(seeds.at("c_n"), device))));
  } else {
    EXPECT_FALSE(r.c_n.defined());
  }

  const Gradients grads = backward(loss);
  const std::map<std::string, Json> param_grads = by_name(c.at("grads"));
  const std::vector<nn::NamedTensor> params = model.named_parameters();
  EXPECT_EQ(params.size(), param_grads.size());
  for (const nn::NamedTensor& p : params) {
    ASSERT_TRUE(param_grads.count(p.name)) << p.name;
    EXPECT_TRUE(matches(grads.get(p.tensor), param_grads.at(p.name), tol)) << p.name;
  }
  for (const auto& [k, g] : by_name(c.at("input_grads")))
    EXPECT_TRUE(matches(grads.get(leaves.at(k)), g, tol)) << "gradient of " << k;

  if (c.contains("eval_output")) {
    M eval_model = model;
    eval_model.eval();
    NoGradGuard no_grad;
    EXPECT_TRUE(matches(run(eval_model, leaves.at("input"), leaves).output, c.at("eval_output"), tol)) << "eval";
  }
}

TEST(RecurrentLikeTorch, StateDictNamesShapesAndCounts) {
  for (const char* name : {"lstm_stack", "lstm_batch_first", "lstm_unbatched_no_bias", "lstm_dropout_all"})
    expect_state_dict_like_torch<nn::LSTM>(name);
  for (const char* name : {"gru_stack", "gru_three_layers", "gru_unbatched_bidirectional_no_bias"})
    expect_state_dict_like_torch<nn::GRU>(name);
}

TEST(RecurrentLikeTorch, WeightsByLayerAndDirection) {
  const nn::LSTM lstm(5, 4, {.num_layers = 2, .bidirectional = true});
  EXPECT_EQ(lstm.weights(0).weight_ih.shape(), (Shape{16, 5}));
  EXPECT_EQ(lstm.weights(1, true).weight_ih.shape(), (Shape{16, 8}));
  EXPECT_EQ(lstm.weights(1, true).weight_ih.value().id(), lstm.state_dict()[12].tensor.id());
  EXPECT_THROW(lstm.weights(2), Error);
  EXPECT_THROW(nn::GRU(5, 4).weights(0, true), Error);
}

// torch's reset_parameters: U(-1/sqrt(H), 1/sqrt(H)) for every parameter.
TEST(RecurrentLikeTorch, InitializationIsUniformInTorchsBound) {
  const nn::GRU gru(3, 16, {.num_layers = 2});
  for (const nn::NamedTensor& p : gru.named_parameters()) {
    const std::vector<double> v = host_values(p.tensor);
    double lo = 1.0, hi = -1.0;
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
    EXPECT_GE(lo, -0.25) << p.name;
    EXPECT_LE(hi, 0.25) << p.name;
    EXPECT_GT(hi - lo, 0.3) << p.name;  // spread over the range, not a constant
  }
}

TEST(RecurrentLikeTorch, LstmStackedBidirectionalWithInitialState) {
  expect_like_torch<nn::LSTM>("lstm_stack", Device::cpu());
}
TEST(RecurrentLikeTorch, LstmBatchFirst) { expect_like_torch<nn::LSTM>("lstm_batch_first", Device::cpu()); }
TEST(RecurrentLikeTorch, LstmUnbatchedWithoutBias) {
  expect_like_torch<nn::LSTM>("lstm_unbatched_no_bias", Device::cpu());
}
// p = 1 drops every element between the layers (deterministic); eval mode keeps them.
TEST(RecurrentLikeTorch, LstmDropoutBetweenLayers) {
  expect_like_torch<nn::LSTM>("lstm_dropout_all", Device::cpu());
}
TEST(RecurrentLikeTorch, GruStackedBidirectionalBatchFirstWithInitialState) {
  expect_like_torch<nn::GRU>("gru_stack", Device::cpu());
}
TEST(RecurrentLikeTorch, GruThreeLayers) { expect_like_torch<nn::GRU>("gru_three_layers", Device::cpu()); }
TEST(RecurrentLikeTorch, GruUnbatchedBidirectionalWithoutBias) {
  expect_like_torch<nn::GRU>("gru_unbatched_bidirectional_no_bias", Device::cpu());
}

class RecurrentOnDevices : public ::testing::TestWithParam<Device> {};
TEST_P(RecurrentOnDevices, TinyLstm) { expect_like_torch<nn::LSTM>("lstm_tiny", GetParam()); }
TEST_P(RecurrentOnDevices, TinyGru) { expect_like_torch<nn::GRU>("gru_tiny", GetParam()); }
INSTANTIATE_TEST_SUITE_P(Devices, RecurrentOnDevices, ::testing::ValuesIn(test_devices()), device_param_name);

// Masks come from (seed, call number): two layers built alike agree call by call, a second
// call draws new masks, and eval mode applies none.
TEST(RecurrentDropout, SeededPerCallAndOffInEval) {
  const auto make = [](double p) {
    manual_seed(7);
    return nn::GRU(3, 8, {.num_layers = 2, .dropout = p});
  };
  const nn::GRU a = make(0.5), b = make(0.5), plain = make(0.0);
  Generator gen(3);
  const Tensor x = randn(Shape{4, 2, 3}, gen);
  const std::vector<double> a1 = host_values(a(x).output), a2 = host_values(a(x).output);
  EXPECT_TRUE(same_bits(host_values(b(x).output), a1));
  EXPECT_NE(a1, a2);
  EXPECT_NE(a1, host_values(plain(x).output));
  nn::GRU a_eval = a;
  a_eval.eval();
  EXPECT_TRUE(same_bits(host_values(a_eval(x).output), host_values(plain(x).output)));
}

struct Encoder : nn::Module {
  nn::LSTM lstm{4, 3, {.num_layers = 2}};
  nn::GRU gru{4, 3, {.batch_first = true}};
  KILN_MODULE(Encoder, lstm, gru)
};

template <class Fn> void expect_error(Fn&& fn, std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "no kiln::Error";
  } catch (const Error& e) {
    for (const std::string& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "missing '" << f << "' in: " << e.what();
  }
}

TEST(RecurrentErrors, NameTheLayerAndTheShapes) {
  const Encoder enc;
  const Tensor x = zeros(Shape{5, 2, 4});
  const Tensor h = zeros(Shape{2, 2, 3});
  expect_error([&] { enc.lstm(zeros(Shape{5, 2, 7})); }, {"lstm (LSTM)", "[5, 2, 7]", "[L, N, 4]"});
  expect_error([&] { enc.gru(zeros(Shape{5, 2, 7})); }, {"gru (GRU)", "[5, 2, 7]", "[N, L, 4]"});
  expect_error([&] { enc.lstm(zeros(Shape{5})); }, {"lstm (LSTM)", "[5]"});
  expect_error([&] { enc.lstm(zeros(Shape{0, 2, 4})); }, {"lstm (LSTM)", "empty", "[0, 2, 4]"});
  expect_error([&] { enc.lstm(zeros(Shape{5, 2, 4}, TensorOptions{DType::i64})); }, {"lstm (LSTM)", "i64"});
  expect_error([&] { enc.lstm(x, nn::LSTMState{zeros(Shape{1, 2, 3}), h}); },
               {"lstm (LSTM)", "h0 must be [2, 2, 3]", "[5, 2, 4]", "got [1, 2, 3]"});
  expect_error([&] { enc.lstm(x, nn::LSTMState{h, zeros(Shape{2, 3, 3})}); },
               {"lstm (LSTM)", "c0 must be [2, 2, 3]", "got [2, 3, 3]"});
  expect_error([&] { enc.lstm(x, nn::LSTMState{h, Tensor{}}); }, {"lstm (LSTM)", "both h and c"});
  // Unbatched input takes unbatched states.
  expect_error([&] { enc.lstm(zeros(Shape{5, 4}), nn::LSTMState{h, h}); }, {"lstm (LSTM)", "h0 must be [2, 3]"});
  // batch_first: the states stay [D * layers, N, H].
  expect_error([&] { enc.gru(zeros(Shape{2, 5, 4}), zeros(Shape{1, 5, 3})); },
               {"gru (GRU)", "h0 must be [1, 2, 3]", "got [1, 5, 3]"});
}

TEST(RecurrentErrors, BadSettings) {
  expect_error([] { nn::LSTM(0, 3); }, {"LSTM", "positive"});
  expect_error([] { nn::GRU(3, 4, {.num_layers = 0}); }, {"GRU", "num_layers"});
  expect_error([] { nn::GRU(3, 4, {.dropout = 1.5}); }, {"GRU", "dropout"});
}

}  // namespace
}  // namespace kiln::test
