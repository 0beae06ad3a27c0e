// The reference cases of tests/data/gen_nn_attention.py (attention, transformer and positional
// encodings), and the checks their tests share: state_dict names and shapes, and gradients of
// every parameter and input against torch's.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "nn/module_cases.h"

namespace kiln::test {

inline const Json& attention_case(const std::string& name) { return nn_case("nn_attention.json", name); }

// A JSON tensor, or an undefined tensor for JSON null (a mask the case does not use).
inline Tensor optional_tensor(const Json& t, Device device) { return t.is_null() ? Tensor{} : make_tensor(t, device); }

// The case's inputs by name, each a leaf that requires gradients.
inline std::map<std::string, Tensor> input_leaves(const Json& c, Device device) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, tensor] : by_name(c.at("inputs"))) out[name] = require_grad(make_tensor(tensor, device));
  return out;
}

// The gradients of sum(seed * output) for every parameter of `model` and every input leaf.
template <class M>
void expect_gradients_like_torch(const M& model, const Tensor& output, const std::map<std::string, Tensor>& inputs,
                                 const Json& c, Device device, Tolerance tol) {
  const Gradients grads = backward(output, make_tensor(c.at("seed"), device));
  if (c.contains("grads")) {
    const std::map<std::string, Json> want = by_name(c.at("grads"));
    EXPECT_EQ(model.named_parameters().size(), want.size()) << c.at("name");
    for (const nn::NamedTensor& p : model.named_parameters()) {
      ASSERT_TRUE(want.count(p.name)) << c.at("name") << " " << p.name;
      EXPECT_TRUE(matches(grads.get(p.tensor), want.at(p.name), tol)) << c.at("name") << " " << p.name;
    }
  }
  for (const auto& [name, want] : by_name(c.at("input_grads")))
    EXPECT_TRUE(matches(grads.get(inputs.at(name)), want, tol)) << c.at("name") << " input " << name;
}

// The message of the kiln::Error that f throws ("no error" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace kiln::test
