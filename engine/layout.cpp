// Layout ops: argument canonicalization on the caller's thread (negative dims, -1 sizes, Python
// slice clamping), then one primitive message each. The composites (flatten, squeeze, unsqueeze
// on reshape; transpose on permute; narrow, split, chunk on slice; stack on cat) never reach a
// device as themselves. An op that would return its input unchanged returns the same handle:
// tensors are values, so sharing the entity is indistinguishable from a copy and costs nothing.
#include "kiln/engine/layout.h"

#include <algorithm>
#include <string>

#include "kiln/engine/describe.h"
#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_layout.h"

namespace kiln {

namespace {

using detail::describe;
using detail::ints_str;

OpAttrs ints_attrs(std::vector<std::int64_t> ints) {
  OpAttrs a;
  a.ints = std::move(ints);
  return a;
}

Tensor reshape_to(Tensor x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return detail::submit1(OpKind::reshape, std::move(x), ints_attrs(shape.to_vector()));
}

// Slice along one dim with canonical bounds 0 <= start <= stop <= size.
Tensor slice_canonical(Tensor x, int dim, std::int64_t start, std::int64_t stop, std::int64_t step) {
  const Shape& s = x.shape();
  if (start == 0 && stop == s[dim] && (step == 1 || s[dim] <= 1)) return x;
  SliceAttrs a;
  a.rank = s.rank();
  for (int d = 0; d < s.rank(); ++d)
    a.dims[static_cast<std::size_t>(d)] = d == dim ? SliceRange{start, stop, step} : SliceRange{0, s[d], 1};
  return detail::submit1(OpKind::slice, std::move(x), a.encode());
}

std::vector<Tensor> split_sizes_checked(const Tensor& x, const std::vector<std::int64_t>& sizes, int dim) {
  std::vector<Tensor> parts;
  parts.reserve(sizes.size());
  std::int64_t at = 0;
  for (std::int64_t n : sizes) {
    parts.push_back(slice_canonical(x, dim, at, at + n, 1));
    at += n;
  }
  return parts;
}

int slicable_dim(const char* op, const Tensor& x, std::int64_t dim) {
  KILN_CHECK(x.rank() > 0, op, "a 0-d tensor " + describe(x) + " has no dim to slice");
  return normalize_dim(op, dim, x.rank());
}

}  // namespace

Tensor reshape(Tensor x, const std::vector<std::int64_t>& shape) {
  const Shape& in = x.shape();
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      KILN_CHECK(infer < 0, "reshape",
                 "shape " + ints_str(shape) + " has more than one -1 (input " + describe(x) + ")");
      infer = static_cast<int>(i);
    } else {
      KILN_CHECK(shape[i] >= 0, "reshape",
                 "shape " + ints_str(shape) + " has a negative size (input " + describe(x) + ")");
      known *= shape[i];
    }
  }
  std::vector<std::int64_t> resolved = shape;
  if (infer >= 0) {
    KILN_CHECK(known != 0, "reshape",
               "shape " + ints_str(shape) + " is ambiguous for input " + describe(x) +
                   ": the -1 could be any size when the other sizes multiply to 0");
    KILN_CHECK(in.numel() % known == 0, "reshape",
               "shape " + ints_str(shape) + " is invalid for input " + describe(x) + " (" + std::to_string(in.numel()) +
                   " elements)");
    resolved[static_cast<std::size_t>(infer)] = in.numel() / known;
  }
  KILN_CHECK(Shape(resolved).numel() == in.numel(), "reshape",
             "shape " + ints_str(shape) + " is invalid for input " + describe(x) + " (" + std::to_string(in.numel()) +
                 " elements)");
  return reshape_to(std::move(x), Shape(resolved));
}

Tensor flatten(Tensor x, std::int64_t start_dim, std::int64_t end_dim) {
  const Shape& in = x.shape();
  if (in.rank() == 0) return reshape_to(std::move(x), Shape{1});
  const int s = normalize_dim("flatten", start_dim, in.rank()), e = normalize_dim("flatten", end_dim, in.rank());
  KILN_CHECK(s <= e, "flatten",
             "start_dim " + std::to_string(start_dim) + " comes after end_dim " + std::to_string(end_dim) + " for " +
                 describe(x));
  Shape out;
  for (int d = 0; d < s; ++d) out.push_back(in[d]);
  std::int64_t merged = 1;
  for (int d = s; d <= e; ++d) merged *= in[d];
  out.push_back(merged);
  for (int d = e + 1; d < in.rank(); ++d) out.push_back(in[d]);
  return reshape_to(std::move(x), out);
}

Tensor squeeze(Tensor x) {
  Shape out;
  for (std::int64_t d : x.shape())
    if (d != 1) out.push_back(d);
  return reshape_to(std::move(x), out);
}

Tensor squeeze(Tensor x, std::int64_t dim) {
  const Shape& in = x.shape();
  const int d = normalize_dim("squeeze", dim, in.rank());
  // Like torch, a dim whose size is not 1 leaves the tensor unchanged.
  if (in.rank() == 0 || in[d] != 1) return x;
  Shape out = in;
  out.erase(d);
  return reshape_to(std::move(x), out);
}

Tensor unsqueeze(Tensor x, std::int64_t dim) {
  Shape out = x.shape();
  out.insert(normalize_dim("unsqueeze", dim, out.rank() + 1), 1);
  return reshape_to(std::move(x), out);
}

Tensor permute(Tensor x, const std::vector<std::int64_t>& dims) {
  const int rank = x.rank();
  KILN_CHECK(static_cast<int>(dims.size()) == rank, "permute",
             "dims " + ints_str(dims) + " must list each of the " + std::to_string(rank) + " dims of " + describe(x) +
                 " once");
  std::vector<std::int64_t> perm(dims.size());
  bool identity = true, seen[kMaxRank] = {};
  for (std::size_t i = 0; i < dims.size(); ++i) {
    KILN_CHECK(dims[i] >= -rank && dims[i] < rank, "permute",
               "dim " + std::to_string(dims[i]) + " in " + ints_str(dims) + " is out of range for " + describe(x));
    perm[i] = dims[i] < 0 ? dims[i] + rank : dims[i];
    KILN_CHECK(!seen[perm[i]], "permute",
               "dims " + ints_str(dims) + " name dim " + std::to_string(perm[i]) + " twice for " + describe(x));
    seen[perm[i]] = true;
    identity = identity && perm[i] == static_cast<std::int64_t>(i);
  }
  if (identity) return x;
  return detail::submit1(OpKind::permute, std::move(x), ints_attrs(std::move(perm)));
}

Tensor transpose(Tensor x, std::int64_t dim0, std::int64_t dim1) {
  const int rank = x.rank();
  if (rank == 0) {
    normalize_dim("transpose", dim0, 0);
    normalize_dim("transpose", dim1, 0);
    return x;
  }
  const int a = normalize_dim("transpose", dim0, rank), b = normalize_dim("transpose", dim1, rank);
  if (a == b) return x;
  std::vector<std::int64_t> perm(static_cast<std::size_t>(rank));
  for (int d = 0; d < rank; ++d) perm[d] = d;
  std::swap(perm[a], perm[b]);
  return permute(std::move(x), perm);
}

Tensor expand(Tensor x, const std::vector<std::int64_t>& shape) {
  const Shape& in = x.shape();
  const int lead = static_cast<int>(shape.size()) - in.rank();
  KILN_CHECK(lead >= 0, "expand",
             "the target shape " + ints_str(shape) + " has fewer dims than the input " + describe(x));
  std::vector<std::int64_t> resolved = shape;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] != -1) continue;
    KILN_CHECK(i >= lead, "expand",
               "-1 in " + ints_str(shape) + " is not allowed in the new leading dim " + std::to_string(i) + " of " +
                   describe(x));
    resolved[i] = in[i - lead];
  }
  if (Shape(resolved) == in) return x;
  return detail::submit1(OpKind::expand, std::move(x), ints_attrs(std::move(resolved)));
}

Tensor slice(Tensor x, std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  const int d = slicable_dim("slice", x, dim);
  KILN_CHECK(step > 0, "slice", "step must be positive, got " + std::to_string(step) + " (input " + describe(x) + ")");
  const std::int64_t n = x.shape()[d];
  const auto clamp_index = [n](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + n : i, 0, n); };
  const std::int64_t lo = clamp_index(start), hi = std::max(lo, clamp_index(end));
  return slice_canonical(std::move(x), d, lo, hi, step);
}

Tensor narrow(Tensor x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  const int d = slicable_dim("narrow", x, dim);
  const std::int64_t n = x.shape()[d];
  KILN_CHECK(start >= -n && start <= n, "narrow",
             "start " + std::to_string(start) + " is out of range for dim " + std::to_string(d) + " of " + describe(x));
  KILN_CHECK(length >= 0, "narrow", "length must be non-negative, got " + std::to_string(length));
  const std::int64_t s = start < 0 ? start + n : start;
  KILN_CHECK(s + length <= n, "narrow",
             "start (" + std::to_string(s) + ") + length (" + std::to_string(length) + ") exceeds the size " +
                 std::to_string(n) + " of dim " + std::to_string(d) + " of " + describe(x));
  return slice_canonical(std::move(x), d, s, s + length, 1);
}

Tensor cat(const std::vector<Tensor>& xs, std::int64_t dim) {
  KILN_CHECK(!xs.empty(), "cat", "expected at least one tensor");
  if (xs.size() == 1) {
    // Still checked, so that a lone tensor gets the same errors as a list.
    KILN_CHECK(xs[0].rank() > 0, "cat", "zero-dimensional tensor " + describe(xs[0]) + " cannot be concatenated");
    normalize_dim("cat", dim, xs[0].rank());
    return xs[0];
  }
  OpAttrs a;
  a.dim = dim;
  std::vector<Tensor> inputs(xs);
  return detail::submit(OpKind::cat, inputs.data(), inputs.size(), std::move(a), xs[0].device())[0];
}

Tensor stack(const std::vector<Tensor>& xs, std::int64_t dim) {
  KILN_CHECK(!xs.empty(), "stack", "expected at least one tensor");
  const Shape& first = xs[0].shape();
  for (std::size_t i = 1; i < xs.size(); ++i)
    KILN_CHECK(xs[i].shape() == first, "stack",
               "tensors must have the same shape, got " + describe(xs[0]) + " at entry 0 and " + describe(xs[i]) +
                   " at entry " + std::to_string(i));
  const int d = normalize_dim("stack", dim, first.rank() + 1);
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (const Tensor& x : xs) parts.push_back(unsqueeze(x, d));
  return cat(parts, d);
}

std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim) {
  const int d = slicable_dim("split", x, dim);
  const std::int64_t n = x.shape()[d];
  KILN_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split",
             "split_size must be positive, got " + std::to_string(split_size) + " for dim " + std::to_string(d) +
                 " of " + describe(x));
  // torch: ceil(n / split_size) parts, but at least one (an empty dim gives one empty part).
  const std::int64_t parts = split_size == 0 ? 1 : std::max<std::int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(parts), split_size);
  sizes.back() = n - split_size * (parts - 1);
  return split_sizes_checked(x, sizes, d);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t dim) {
  const int d = slicable_dim("split", x, dim);
  const std::int64_t n = x.shape()[d];
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    KILN_CHECK(s >= 0, "split", "sizes " + ints_str(sizes) + " must not be negative");
    total += s;
  }
  KILN_CHECK(total == n, "split",
             "sizes " + ints_str(sizes) + " sum to " + std::to_string(total) + ", not to " + std::to_string(n) +
                 ", the size of dim " + std::to_string(d) + " of " + describe(x));
  return split_sizes_checked(x, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim) {
  KILN_CHECK(chunks > 0, "chunk", "chunks must be positive, got " + std::to_string(chunks));
  const int d = slicable_dim("chunk", x, dim);
  const std::int64_t n = x.shape()[d];
  // torch keeps the number of chunks only for an empty dim; otherwise chunks of ceil(n / chunks).
  if (n == 0) return split_sizes_checked(x, std::vector<std::int64_t>(static_cast<std::size_t>(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

Tensor flip(Tensor x, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> norm;
  norm.reserve(dims.size());
  bool any = false;
  for (std::int64_t d : dims) {
    const int nd = normalize_dim("flip", d, x.rank());
    KILN_CHECK(std::find(norm.begin(), norm.end(), nd) == norm.end(), "flip",
               "dim " + std::to_string(nd) + " appears more than once in " + ints_str(dims) + " for " + describe(x));
    norm.push_back(nd);
    any = any || (nd < x.rank() && x.shape()[nd] > 1);
  }
  if (!any) return x;
  return detail::submit1(OpKind::flip, std::move(x), ints_attrs(std::move(norm)));
}

Tensor repeat(Tensor x, const std::vector<std::int64_t>& repeats) {
  KILN_CHECK(static_cast<int>(repeats.size()) >= x.rank(), "repeat",
             "repeats " + ints_str(repeats) + " must have at least as many entries as " + describe(x) + " has dims");
  for (std::int64_t r : repeats) KILN_CHECK(r >= 0, "repeat", "repeats " + ints_str(repeats) + " must not be negative");
  if (static_cast<int>(repeats.size()) == x.rank() &&
      std::all_of(repeats.begin(), repeats.end(), [](auto r) { return r == 1; }))
    return x;
  return detail::submit1(OpKind::repeat, std::move(x), ints_attrs(repeats));
}

Tensor pad(Tensor x, const std::vector<std::int64_t>& pads, double value) {
  KILN_CHECK(pads.size() % 2 == 0, "pad", "pads " + ints_str(pads) + " must come in (before, after) pairs");
  KILN_CHECK(static_cast<int>(pads.size() / 2) <= x.rank(), "pad",
             "pads " + ints_str(pads) + " cover more dims than " + describe(x) + " has");
  if (std::all_of(pads.begin(), pads.end(), [](auto p) { return p == 0; })) return x;
  return detail::submit1(OpKind::pad, std::move(x), PadAttrs::from_pairs(pads, value).encode());
}

Tensor tril(Tensor x, std::int64_t diagonal) {
  OpAttrs a;
  a.dim = diagonal;
  return detail::submit1(OpKind::tril, std::move(x), std::move(a));
}

Tensor triu(Tensor x, std::int64_t diagonal) {
  OpAttrs a;
  a.dim = diagonal;
  return detail::submit1(OpKind::triu, std::move(x), std::move(a));
}

}  // namespace kiln
