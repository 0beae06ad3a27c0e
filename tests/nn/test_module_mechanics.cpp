// What every module can do, whatever its layers: paths, cheap copies and deep clones,
// to(device), train/eval modes, freezing, mapping parameters, containers, summaries, errors
// that name the layer, and forward/backward on many threads at once.
#include <gtest/gtest.h>

#include <thread>

#include "nn/module_cases.h"
#include "support/fusion_scope.h"

namespace kiln::test {
namespace {

struct Block : nn::Module {
  nn::Linear proj{4, 4};
  nn::LayerNorm norm{{4}};
  nn::Dropout drop{{.p = 0.5}};
  Tensor forward(const Tensor& x) const { return drop(norm(proj(x))); }
  KILN_MODULE(Block, proj, norm, drop)
};

struct Net : nn::Module {
  nn::ModuleList<Block> blocks{{Block{}, Block{}}};
  nn::ModuleDict<nn::Linear> heads;
  std::optional<nn::Linear> extra;
  Net() { heads.insert("cls", nn::Linear(4, 3)); }
  Tensor forward(const Tensor& x) const {
    Tensor h = x;
    for (const Block& b : blocks) h = b(h);
    return heads.at("cls")(h);
  }
  KILN_MODULE(Net, blocks, heads, extra)
};

std::vector<std::string> names(const std::vector<nn::NamedTensor>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(t.name);
  return out;
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>().get(); }

TEST(ModuleMechanics, PathsFollowFieldsAndContainers) {
  Net net;
  EXPECT_EQ(names(net.named_parameters()),
            (std::vector<std::string>{"blocks.0.proj.weight", "blocks.0.proj.bias", "blocks.0.norm.weight",
                                      "blocks.0.norm.bias", "blocks.1.proj.weight", "blocks.1.proj.bias",
                                      "blocks.1.norm.weight", "blocks.1.norm.bias", "heads.cls.weight",
                                      "heads.cls.bias"}));
  EXPECT_EQ(net.blocks[1].norm.path(), "blocks.1.norm");
  EXPECT_EQ(net.heads.at("cls").path(), "heads.cls");
  // An optional sub-module counts once it holds one.
  net.extra = nn::Linear(4, 2);
  net.name_children();
  EXPECT_EQ(net.named_parameters().size(), 12u);
  EXPECT_EQ(net.extra->path(), "extra");
  EXPECT_EQ(net.parameter_count(), 2 * (16 + 4 + 4 + 4) + 12 + 3 + 8 + 2);
}

TEST(ModuleMechanics, CopiesShareAndClonesDoNot) {
  MLP a;
  MLP shared = a;
  MLP deep = a.clone();
  EXPECT_EQ(shared.fc1.weight.value().id(), a.fc1.weight.value().id());
  EXPECT_NE(deep.fc1.weight.value().id(), a.fc1.weight.value().id());
  EXPECT_EQ(values(deep.fc1.weight), values(a.fc1.weight));
  EXPECT_TRUE(is_leaf(deep.fc1.weight));

  nn::BatchNorm1d bn(3);
  nn::BatchNorm1d bn_shared = bn, bn_deep = bn.clone();
  bn(from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3}));  // training: moves the running mean
  EXPECT_EQ(values(bn_shared.running_mean.get()), values(bn.running_mean.get()));
  EXPECT_EQ(values(bn_deep.running_mean.get()), (std::vector<float>{0, 0, 0}));
}

TEST(ModuleMechanics, MapParametersReturnsANewModule) {
  const MLP a;
  const MLP zeroed = a.map_parameters([](const std::string&, const Tensor& t) { return zeros_like(t); });
  EXPECT_EQ(values(zeroed.fc2.bias), std::vector<float>(8, 0.0f));
  EXPECT_NE(values(a.fc2.bias), std::vector<float>(8, 0.0f));  // the original is untouched
  EXPECT_THROW(a.map_parameters([](const std::string&, const Tensor&) { return zeros(Shape{1}); }), Error);
}

TEST(ModuleMechanics, TrainAndEvalReachEverySubModule) {
  Net net;
  net.eval();
  EXPECT_FALSE(net.blocks[0].drop.is_training());
  EXPECT_FALSE(net.heads.at("cls").is_training());
  const Tensor x = randn(Shape{2, 4});
  EXPECT_EQ(values(net(x)), values(net(x)));  // no dropout in eval mode
  net.train();
  EXPECT_TRUE(net.blocks[1].drop.is_training());
}

TEST(ModuleMechanics, FrozenParametersTakeNoGradient) {
  MLP m;
  m.fc1.freeze();
  EXPECT_EQ(m.parameters(/*trainable_only=*/true).size(), 4u);
  EXPECT_EQ(m.parameter_count(true), 8 * 8 + 8 + 8 * 3 + 3);
  const Gradients g = backward(sum(m(randn(Shape{2, 6}))));
  EXPECT_FALSE(g.contains(m.fc1.weight));
  EXPECT_TRUE(g.contains(m.fc2.weight));
  m.unfreeze();
  EXPECT_TRUE(backward(sum(m(randn(Shape{2, 6})))).contains(m.fc1.weight));
}

TEST(ModuleMechanics, ToDeviceMovesEveryTensor) {
  for (const Device& d : test_devices()) {
    const nn::BatchNorm1d bn(3);
    const nn::BatchNorm1d moved = bn.to(d);
    for (const nn::NamedTensor& t : moved.state_dict()) EXPECT_EQ(t.tensor.device(), d) << t.name;
    EXPECT_TRUE(moved.weight.trainable());
    EXPECT_TRUE(requires_grad(moved.weight));
  }
}

TEST(ModuleMechanics, SummaryShowsTheTree) {
  nn::Sequential net(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 3, {.bias = false}));
  net.freeze();
  EXPECT_EQ(net.summary(),
            "Sequential(3 modules)  80 parameters (0 trainable)\n"
            "  0: Linear(in_features=6, out_features=8, bias=true)  56\n"
            "    weight: [8, 6] (frozen)  48\n"
            "    bias: [8] (frozen)  8\n"
            "  1: ReLU()  0\n"
            "  2: Linear(in_features=8, out_features=3, bias=false)  24\n"
            "    weight: [3, 8] (frozen)  24\n");
}

TEST(ModuleMechanics, MisuseNamesTheLayerPathAndShapes) {
  const Net net;
  try {
    net(randn(Shape{2, 5}));
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("blocks.0.proj (Linear)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 5]"), std::string::npos) << msg;
  }
  nn::Sequential seq(nn::Linear(4, 4), nn::BatchNorm2d(4));
  try {
    seq(randn(Shape{2, 4}));
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 (BatchNorm2d)"), std::string::npos) << e.what();
  }
}

// Errors from inside a layer's ops carry the layer's path: a kernel larger than the padded
// input, and (where a second device exists) a device mix.
TEST(ModuleMechanics, OpErrorsInsideALayerNameItsPath) {
  nn::Sequential net(nn::Conv2d(1, 2, {5}), nn::ReLU());
  const auto message_of = [&](const Tensor& x) {
    try {
      net(x);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string small = message_of(randn(Shape{1, 1, 3, 3}));
  EXPECT_NE(small.find("0 (Conv2d)"), std::string::npos) << small;
  EXPECT_NE(small.find("[1, 1, 3, 3]"), std::string::npos) << small;
  for (const Device& d : test_devices()) {
    if (d == Device::cpu()) continue;
    const std::string mixed = message_of(randn(Shape{1, 1, 6, 6}, default_generator(), {DType::f32, d}));
    EXPECT_NE(mixed.find("0 (Conv2d)"), std::string::npos) << mixed;
    EXPECT_NE(mixed.find(d.str()), std::string::npos) << mixed;
  }
}

// A Linear reads its weight transposed in place (x Wᵀ as one matmul with a transposed operand,
// on every device that can): a forward that records nothing copies no weight, so every forward
// launches the same kernels, gives the recorded forward's values, and so does one with a new weight.
TEST(ModuleMechanics, InferenceReadsTheWeightTransposedInPlace) {
  const FusionScope fusion(true);
  nn::Linear lin(6, 4);
  const Tensor x = randn(Shape{2, 6});
  const std::vector<float> recorded = values(lin(x));
  NoGradGuard no_grad;
  const auto kernels_of_a_forward = [&] {
    sync(Device::cpu()).get();
    const EngineCounters before = counters(Device::cpu());
    const std::vector<float> v = values(lin(x));
    EXPECT_EQ(v, recorded);
    const EngineCounters after = counters(Device::cpu());
    EXPECT_EQ(after.ops_decomposed, before.ops_decomposed);  // the CPU reads Wᵀ itself
    return after.kernels_launched - before.kernels_launched;
  };
  const std::uint64_t first = kernels_of_a_forward();
  EXPECT_EQ(first, 1u);  // the product with the bias add as its epilogue
  EXPECT_EQ(kernels_of_a_forward(), first);
  lin = lin.map_parameters([](const std::string&, const Tensor& t) { return mul(t, 1.0); });
  EXPECT_EQ(kernels_of_a_forward(), first);
}

// Sequential hands each layer its input, so a layer that takes it by value (Linear, ReLU) lets
// its op consume it: a forward through Sequential sends the engine as many messages as the same
// layers called on temporaries (a kept input would add a message to drop it later), and the same
// values.
TEST(ModuleMechanics, SequentialHandsEachLayerItsInput) {
  const FusionScope fusion(true);
  nn::Sequential net(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 3));
  const auto& l1 = net.get<nn::Linear>(0);
  const auto& r = net.get<nn::ReLU>(1);
  const auto& l2 = net.get<nn::Linear>(2);
  const Tensor x = randn(Shape{2, 6});
  NoGradGuard no_grad;
  const auto messages_of = [&](const auto& forward, std::vector<float>& out) {
    sync(Device::cpu()).get();
    const std::uint64_t before = counters(Device::cpu()).ops_submitted;
    out = values(forward());
    sync(Device::cpu()).get();
    return counters(Device::cpu()).ops_submitted - before;
  };
  std::vector<float> inline_values, sequential_values;
  messages_of([&] { return l2(r(l1(x))); }, inline_values);  // warm: plans recorded
  const std::uint64_t inline_messages = messages_of([&] { return l2(r(l1(x))); }, inline_values);
  const std::uint64_t sequential_messages = messages_of([&] { return net(x); }, sequential_values);
  EXPECT_EQ(sequential_messages, inline_messages);
  EXPECT_EQ(sequential_values, inline_values);
}

// One module, four threads: inference agrees with a single thread's, and each thread's
// gradients (its own graph over shared parameters) agree with the same batch run alone.
TEST(ModuleMechanics, ForwardAndBackwardOnManyThreads) {
  MLP m;
  std::vector<Tensor> inputs;
  for (int t = 0; t < 4; ++t) inputs.push_back(randn(Shape{3, 6}));
  std::vector<std::vector<float>> alone, grads_alone;
  for (const Tensor& x : inputs) {
    alone.push_back(values(m(x)));
    grads_alone.push_back(values(backward(sum(m(x))).get(m.fc1.weight)));
  }
  std::vector<std::vector<float>> together(4), grads_together(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      together[t] = values(m(inputs[t]));
      grads_together[t] = values(backward(sum(m(inputs[t]))).get(m.fc1.weight));
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(together, alone);
  EXPECT_EQ(grads_together, grads_alone);
}

}  // namespace
}  // namespace kiln::test
