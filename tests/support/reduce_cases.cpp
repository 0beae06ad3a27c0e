#include "support/reduce_cases.h"

namespace kiln::test {

Tensor run_reduce_case(const RefCase& c, Tensor x) {
  const Json& a = c.attrs;
  const Dims dims = a.value("dims", Dims{});
  const bool keepdim = a.value("keepdim", false);
  const std::string& op = c.op;
  if (op == "sum") return sum(x, dims, keepdim);
  if (op == "mean") return mean(x, dims, keepdim);
  if (op == "prod") return prod(x, dims, keepdim);
  if (op == "max") return max(x, dims, keepdim);
  if (op == "min") return min(x, dims, keepdim);
  if (op == "var") return var(x, dims, a.value("correction", 1.0), keepdim);
  if (op == "std") return kiln::std(x, dims, a.value("correction", 1.0), keepdim);
  if (op == "any") return any(x, dims, keepdim);
  if (op == "all") return all(x, dims, keepdim);
  if (op == "logsumexp") return logsumexp(x, dims, keepdim);
  if (op == "argmax") return a.contains("dim") ? argmax(x, a.at("dim").get<std::int64_t>(), keepdim) : argmax(x);
  if (op == "argmin") return a.contains("dim") ? argmin(x, a.at("dim").get<std::int64_t>(), keepdim) : argmin(x);
  const std::int64_t dim = a.at("dim").get<std::int64_t>();
  if (op == "cumsum") return cumsum(x, dim);
  if (op == "softmax") return softmax(x, dim);
  if (op == "log_softmax") return log_softmax(x, dim);
  throw std::runtime_error("no kiln op for reference op " + op);
}

}  // namespace kiln::test
