#include "kiln/onnx/host_eval.h"

#include <cmath>
#include <cstdint>

namespace kiln::onnx::detail {

std::optional<std::vector<std::int64_t>> broadcast_shapes(const std::vector<std::int64_t>& a,
                                                          const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    const std::int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[k] = da == 1 ? db : da;
  }
  return out;
}

namespace {
// double -> int64 without the undefined behaviour of out-of-range values (NaN gives 0).
std::int64_t to_int(double v) {
  if (!(v == v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return std::int64_t(v);
}

// The flat index into a tensor of `shape` (right-aligned, broadcast) for each output index.
std::vector<std::size_t> source_indices(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& out) {
  std::int64_t n = 1;
  for (auto d : out) n *= d;
  std::vector<std::size_t> idx(std::size_t(std::max<std::int64_t>(n, 0)));
  const std::size_t offset = out.size() - shape.size();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t rest = i, src = 0, stride = 1;
    for (std::size_t d = out.size(); d-- > 0;) {
      const std::int64_t coord = rest % out[d];
      rest /= out[d];
      if (d >= offset) {
        const std::int64_t size = shape[d - offset];
        src += (size == 1 ? 0 : coord) * stride;
        stride *= size;
      }
    }
    idx[std::size_t(i)] = std::size_t(src);
  }
  return idx;
}
}  // namespace

HostTensor host_binary(const HostTensor& a, const HostTensor& b, DType out,
                       const std::function<std::int64_t(std::int64_t, std::int64_t)>& on_ints,
                       const std::function<double(double, double)>& on_floats) {
  HostTensor r;
  r.dtype = out;
  r.shape = *broadcast_shapes(a.shape, b.shape);
  const auto ia = source_indices(a.shape, r.shape);
  const auto ib = source_indices(b.shape, r.shape);
  const bool ints_in = a.is_integer() && b.is_integer();
  for (std::size_t k = 0; k < ia.size(); ++k) {
    if (ints_in) {
      const std::int64_t v = on_ints(a.ints[ia[k]], b.ints[ib[k]]);
      if (r.is_integer())
        r.ints.push_back(v);
      else
        r.floats.push_back(float(v));
    } else {
      const double v = on_floats(a.at(ia[k]), b.at(ib[k]));
      if (r.is_integer())
        r.ints.push_back(to_int(v));
      else
        r.floats.push_back(float(v));
    }
  }
  return r;
}

HostTensor host_cast(const HostTensor& x, DType dtype) {
  HostTensor r;
  r.dtype = dtype;
  r.shape = x.shape;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double v = x.at(k);
    if (dtype == DType::bool_)
      r.ints.push_back(v != 0);
    else if (dtype == DType::i64)
      r.ints.push_back(x.is_integer() ? x.ints[k] : to_int(v));
    else
      r.floats.push_back(float(v));
  }
  return r;
}

}  // namespace kiln::onnx::detail
