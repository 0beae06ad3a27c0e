// The kiln twins of the models in tests/data/gen_nn_modules.py, and loading a reference
// case's weights into them by name.
#pragma once
#include <map>

#include "kiln/nn/nn.h"
#include "support/reference.h"

namespace kiln::test {

struct MLP : nn::Module {
  nn::Linear fc1{6, 8}, fc2{8, 8}, fc3{8, 3};
  Tensor forward(const Tensor& x) const { return fc3(relu(fc2(relu(fc1(x))))); }
  KILN_MODULE(MLP, fc1, fc2, fc3)
};

struct SmallCNN : nn::Module {
  nn::Conv2d conv1{1, 4, {3}, {.padding = {1}}};
  nn::BatchNorm2d bn1{4};
  nn::Conv2d conv2{4, 8, {3}, {.padding = {1}}};
  nn::MaxPool2d pool{{.kernel = {2}}};
  nn::Linear fc{8 * 2 * 2, 5};
  Tensor forward(const Tensor& x) const {
    Tensor h = pool(relu(bn1(conv1(x))));
    h = pool(relu(conv2(h)));
    return fc(flatten(h, 1));
  }
  KILN_MODULE(SmallCNN, conv1, bn1, conv2, pool, fc)
};

struct ResidualBlock : nn::Module {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  explicit ResidualBlock(std::int64_t c)
      : conv1(c, c, {3}, {.padding = {1}, .bias = false}), conv2(c, c, {3}, {.padding = {1}, .bias = false}),
        bn1(c), bn2(c) {}
  Tensor forward(const Tensor& x) const { return relu(add(bn2(conv2(relu(bn1(conv1(x))))), x)); }
  KILN_MODULE(ResidualBlock, conv1, bn1, conv2, bn2)
};

inline nn::Sequential sequential_model() { return nn::Sequential(nn::Linear(5, 7), nn::Tanh(), nn::Linear(7, 2)); }

// name -> JSON tensor of a case's "state", "grads" or "buffers_after_train" list.
inline std::map<std::string, Json> by_name(const Json& list) {
  std::map<std::string, Json> out;
  for (const Json& e : list) out[e.at("name").get<std::string>()] = e.at("tensor");
  return out;
}

// The case called `name` of tests/data/<file> (a gen_nn_*.py output), loaded once per file.
const Json& nn_case(const std::string& file, const std::string& name);
inline const Json& module_case(const std::string& name) { return nn_case("nn_modules.json", name); }

// Names, shapes and order of the state_dict, and the parameter count, as torch's.
template <class M> void expect_state_dict_names(const M& model, const Json& c) {
  const std::vector<nn::NamedTensor> mine = model.state_dict();
  const Json& theirs = c.at("state");
  ASSERT_EQ(mine.size(), theirs.size()) << c.at("name");
  for (std::size_t i = 0; i < mine.size(); ++i) {
    EXPECT_EQ(mine[i].name, theirs[i].at("name").get<std::string>()) << c.at("name") << " entry " << i;
    EXPECT_EQ(mine[i].tensor.shape(), json_shape(theirs[i].at("tensor"))) << c.at("name") << " " << mine[i].name;
  }
  if (c.contains("parameter_count")) {
    EXPECT_EQ(model.parameter_count(), c.at("parameter_count").get<std::int64_t>()) << c.at("name");
  }
}

// Loads every parameter and buffer of `m` from the case's state dict (all must be there).
template <class M> M load_state(const M& m, const Json& c, Device device) {
  const std::map<std::string, Json> state = by_name(c.at("state"));
  M loaded = m.map_parameters([&](const std::string& path, const Tensor&) {
    return make_tensor(state.at(path), device);
  });
  loaded.map_buffers_in_place([&](const std::string& path, const Tensor&) {
    return make_tensor(state.at(path), device);
  });
  return loaded.to(device);
}

}  // namespace kiln::test
