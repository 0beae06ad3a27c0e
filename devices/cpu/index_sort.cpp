// sort and topk along one dim. Each slice is copied into scratch as (value, position) pairs and
// ordered by value, ties broken by position: that total order makes the result stable without
// a stable sort, and lets topk use a partial sort. NaN ranks above every number, as in torch.
// Reading the whole slice before writing it is what makes running in place safe.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/devices/cpu/index_kernels.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/ops/attrs_index.h"

namespace kiln::cpu::index {
namespace {

template <class T>
struct Entry {
  T value;
  std::int64_t pos;
};

// a ranks strictly before b in ascending order (NaN last).
template <class T>
bool less_nan_last(T a, T b) {
  if constexpr (std::is_same_v<T, float>)
    return a < b || (std::isnan(b) && !std::isnan(a));
  else
    return a < b;
}

template <class T>
auto entry_order(bool descending) {
  return [descending](const Entry<T>& a, const Entry<T>& b) {
    const bool before = descending ? less_nan_last(b.value, a.value) : less_nan_last(a.value, b.value);
    const bool after = descending ? less_nan_last(a.value, b.value) : less_nan_last(b.value, a.value);
    return before || (!after && a.pos < b.pos);
  };
}

// Runs fn(slice values, out values, out indices) over every slice along `dim`: slice s of
// (outer o, inner i) starts at o*size*inner + i with stride `inner`, in the input; in the
// outputs it has `kept` elements.
template <class T>
void sort_slices(const OpIr& op, const KernelArgs& args, std::int64_t kept, bool descending) {
  const IndexDims x = index_dims(op.inputs[0].shape);
  const int dim = index_op_dim(op, x.rank);
  const std::int64_t size = x.size[dim], inner = x.stride[dim];
  const std::int64_t slices = size == 0 ? 0 : op.inputs[0].numel() / size;
  if (slices == 0 || kept == 0) return;
  const T* src = in_ptr<T>(args, 0);
  T* values = out_ptr<T>(args, 0);
  std::int64_t* indices = out_ptr<std::int64_t>(args, 1);
  const auto order = entry_order<T>(descending);
  const std::int64_t cost = size * std::max<std::int64_t>(1, static_cast<std::int64_t>(std::log2(size + 1)));
  parallel_for(slices, std::max<std::int64_t>(1, kDefaultGrain / cost), [&](std::int64_t b, std::int64_t e) {
    std::vector<Entry<T>> scratch(static_cast<std::size_t>(size));
    for (std::int64_t s = b; s < e; ++s) {
      const std::int64_t o = s / inner, i = s % inner;
      const T* in = src + o * size * inner + i;
      for (std::int64_t p = 0; p < size; ++p) scratch[p] = Entry<T>{in[p * inner], p};
      if (kept == size)
        std::sort(scratch.begin(), scratch.end(), order);
      else
        std::partial_sort(scratch.begin(), scratch.begin() + kept, scratch.end(), order);
      const std::int64_t base = o * kept * inner + i;
      for (std::int64_t p = 0; p < kept; ++p) {
        values[base + p * inner] = scratch[p].value;
        indices[base + p * inner] = scratch[p].pos;
      }
    }
  });
}

}  // namespace

void sort_kernel(const OpIr& op, const KernelArgs& args) {
  const IndexDims x = index_dims(op.inputs[0].shape);
  const std::int64_t size = x.size[index_op_dim(op, x.rank)];
  visit_dtype(op.inputs[0].dtype, "sort", [&](auto tag) { sort_slices<decltype(tag)>(op, args, size, op.attrs.flag); });
}

void topk_kernel(const OpIr& op, const KernelArgs& args) {
  // largest = true is a descending order
  const TopkAttrs t = TopkAttrs::decode(op);
  visit_dtype(op.inputs[0].dtype, "topk", [&](auto tag) { sort_slices<decltype(tag)>(op, args, t.k, t.largest); });
}

}  // namespace kiln::cpu::index
