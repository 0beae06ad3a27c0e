#include "kiln/engine/describe.h"

namespace kiln::detail {

std::string describe(const Tensor& x) {
  return x.defined() ? std::string(dtype_name(x.dtype())) + x.shape().str() : std::string("(undefined)");
}

std::string ints_str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace kiln::detail
