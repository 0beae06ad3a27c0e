#include "kiln/train/named_states.h"

#include <algorithm>

#include "kiln/base/error.h"

namespace kiln::train {

namespace {
std::string prefix_of(const std::string& name) { return name + "/"; }
bool in_any(const std::string& key, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return key.starts_with(prefix_of(n)); });
}
}  // namespace

void add_named_state(optim::State& merged, const std::string& name, const optim::State& part) {
  const std::string prefix = prefix_of(name);
  for (const nn::NamedTensor& t : part.tensors) merged.tensors.push_back({prefix + t.name, t.tensor});
  for (const auto& [key, value] : part.numbers) merged.numbers[prefix + key] = value;
}

optim::State named_state(const optim::State& merged, const std::string& name) {
  const std::string prefix = prefix_of(name);
  optim::State part;
  for (const nn::NamedTensor& t : merged.tensors)
    if (t.name.starts_with(prefix)) part.tensors.push_back({t.name.substr(prefix.size()), t.tensor});
  for (const auto& [key, value] : merged.numbers)
    if (key.starts_with(prefix)) part.numbers[key.substr(prefix.size())] = value;
  return part;
}

optim::State unnamed_state(const optim::State& merged, const std::vector<std::string>& names) {
  optim::State own;
  for (const nn::NamedTensor& t : merged.tensors)
    if (!in_any(t.name, names)) own.tensors.push_back(t);
  for (const auto& [key, value] : merged.numbers)
    if (!in_any(key, names)) own.numbers[key] = value;
  return own;
}

void check_state_name(const std::string& name, const std::vector<std::string>& taken) {
  KILN_CHECK(!name.empty() && name.find('/') == std::string::npos, "Learner",
             "a state's name must be non-empty and without '/', got '" + name + "'");
  KILN_CHECK(std::find(taken.begin(), taken.end(), name) == taken.end(), "Learner",
             "a state named '" + name + "' is saved already");
}

}  // namespace kiln::train
