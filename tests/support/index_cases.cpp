#include "support/index_cases.h"

#include <limits>

namespace kiln::test {

namespace {

double json_scalar(const Json& v) {
  if (!v.is_string()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::runtime_error("bad scalar attribute " + s);
}

}  // namespace

std::vector<Tensor> run_index_case(const RefCase& c, Device d, std::vector<Tensor>* kept) {
  std::vector<Tensor> inputs;
  for (const auto& t : c.inputs) inputs.push_back(make_tensor(t, d));
  if (kept) *kept = inputs;
  auto in = [&](std::size_t i) { return std::move(inputs.at(i)); };
  const auto dim = [&] { return c.attrs.at("dim").get<std::int64_t>(); };
  if (c.op == "gather") return {gather(in(0), dim(), in(1))};
  if (c.op == "scatter") return {scatter(in(0), dim(), in(1), in(2))};
  if (c.op == "scatter_add") return {scatter_add(in(0), dim(), in(1), in(2))};
  if (c.op == "index_select") return {index_select(in(0), dim(), in(1))};
  if (c.op == "masked_fill") return {masked_fill(in(0), in(1), json_scalar(c.attrs.at("value")))};
  if (c.op == "one_hot") return {one_hot(in(0), c.attrs.at("num_classes").get<std::int64_t>())};
  if (c.op == "sort") {
    auto [values, indices] = sort(in(0), dim(), c.attrs.at("descending").get<bool>());
    return {values, indices};
  }
  if (c.op == "topk") {
    auto [values, indices] = topk(in(0), c.attrs.at("k").get<std::int64_t>(), dim(), c.attrs.at("largest").get<bool>());
    return {values, indices};
  }
  if (c.op == "topk_then_gather") {
    Tensor x = in(0);
    Tensor top = topk(x, c.attrs.at("k").get<std::int64_t>(), dim()).second;
    return {gather(std::move(x), dim(), std::move(top))};
  }
  throw std::runtime_error("no runner for op " + c.op);
}

}  // namespace kiln::test
