#include "kiln/train/step.h"

#include "kiln/base/error.h"

namespace kiln::train {

const Tensor& StepOutput::get(const std::string& name) const {
  const auto it = extra.find(name);
  if (it != extra.end()) return it->second;
  std::string names;
  for (const auto& [key, value] : extra) names += (names.empty() ? "'" : ", '") + key + "'";
  throw Error("StepOutput", "the step returned no extra tensor '" + name + "' (it returned " +
                                (names.empty() ? std::string("none") : names) + ")");
}

std::optional<double> EpochEnd::value(const std::string& name) const {
  for (const MetricValues* values : {&valid, &train})
    for (const MetricValue& v : *values)
      if (v.name == name) return v.value;
  return std::nullopt;
}

}  // namespace kiln::train
