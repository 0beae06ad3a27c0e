#include "ops/layout_apply.h"

#include <stdexcept>

namespace kiln::test {

std::vector<Tensor> apply_layout_op(const std::string& op, const Json& a, const std::vector<Tensor>& xs) {
  const auto num = [&](const char* key, std::int64_t fallback) {
    return a.contains(key) ? a.at(key).get<std::int64_t>() : fallback;
  };
  const auto list = [&](const char* key) { return a.at(key).get<std::vector<std::int64_t>>(); };
  const Tensor& x = xs.at(0);
  if (op == "reshape") return {reshape(x, list("shape"))};
  if (op == "flatten") return {flatten(x, num("start", 0), num("end", -1))};
  if (op == "squeeze") return {a.contains("dim") ? squeeze(x, num("dim", 0)) : squeeze(x)};
  if (op == "unsqueeze") return {unsqueeze(x, num("dim", 0))};
  if (op == "permute") return {permute(x, list("dims"))};
  if (op == "transpose") return {transpose(x, num("dim0", 0), num("dim1", 1))};
  if (op == "expand") return {expand(x, list("shape"))};
  if (op == "slice") return {slice(x, num("dim", 0), num("start", 0), num("end", 0), num("step", 1))};
  if (op == "narrow") return {narrow(x, num("dim", 0), num("start", 0), num("length", 0))};
  if (op == "cat") return {cat(xs, num("dim", 0))};
  if (op == "stack") return {stack(xs, num("dim", 0))};
  if (op == "split")
    return a.contains("size") ? split(x, num("size", 0), num("dim", 0)) : split(x, list("sizes"), num("dim", 0));
  if (op == "chunk") return chunk(x, num("chunks", 1), num("dim", 0));
  if (op == "flip") return {flip(x, list("dims"))};
  if (op == "repeat") return {repeat(x, list("repeats"))};
  if (op == "pad") {
    double value = 0.0;
    if (a.contains("value"))
      value = a.at("value").is_string() ? json_values(Json{{"data", {a.at("value")}}})[0] : a.at("value").get<double>();
    return {pad(x, list("pads"), value)};
  }
  if (op == "tril") return {tril(x, num("diagonal", 0))};
  if (op == "triu") return {triu(x, num("diagonal", 0))};
  throw std::runtime_error("layout reference data names an unknown op: " + op);
}

}  // namespace kiln::test
