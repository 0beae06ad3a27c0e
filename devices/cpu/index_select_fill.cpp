// index_select, masked_fill and one_hot: row copies and selects with contiguous inner loops.
#include <cstring>

#include "kiln/devices/cpu/index_kernels.h"
#include "kiln/devices/cpu/parallel.h"

namespace kiln::cpu::index {
namespace {

template <class T>
void index_select_typed(const OpIr& op, const KernelArgs& args) {
  const IndexDims x = index_dims(op.inputs[0].shape);
  const int dim = index_op_dim(op, x.rank);
  const std::int64_t n = op.inputs[1].numel();
  const std::int64_t size = x.size[dim], inner = x.stride[dim];
  const std::int64_t outer = op.inputs[0].numel() / std::max<std::int64_t>(1, size * inner);
  if (op.outputs[0].numel() == 0) return;
  const T* src = in_ptr<T>(args, 0);
  const std::int64_t* idx = in_ptr<std::int64_t>(args, 1);
  T* out = out_ptr<T>(args, 0);
  // Every index is checked before anything is written.
  check_indices(op, idx, n, dim, size);
  // Rows are (outer, j) pairs of `inner` elements.
  parallel_for(outer * n, std::max<std::int64_t>(1, kDefaultGrain / inner), [&](std::int64_t b, std::int64_t e) {
    std::int64_t o = b / n, j = b % n;
    for (std::int64_t r = b; r < e; ++r) {
      const T* from = src + (o * size + idx[j]) * inner;
      T* to = out + r * inner;
      if (inner == 1)
        *to = *from;
      else
        std::memcpy(to, from, static_cast<std::size_t>(inner) * sizeof(T));
      if (++j == n) j = 0, ++o;
    }
  });
}

template <class T>
void masked_fill_typed(const OpIr& op, const KernelArgs& args) {
  const std::int64_t numel = op.outputs[0].numel();
  if (numel == 0) return;
  const T* x = in_ptr<T>(args, 0);
  const bool* mask = in_ptr<bool>(args, 1);
  T* out = out_ptr<T>(args, 0);
  const T value = static_cast<T>(op.attrs.scalar);

  // Runs whose mask stride is 1 or 0 (devices/shape_plans.h).
  MaskRuns runs = mask_runs(op.outputs[0].shape, op.inputs[1].shape);
  std::int64_t* size = runs.size;
  std::int64_t* mstride = runs.mask_stride;
  int& rank = runs.rank;
  // dims were collected innermost first
  const std::int64_t run = rank > 0 ? size[0] : 1;
  const bool run_masked_elementwise = rank > 0 && mstride[0] != 0;
  const std::int64_t rows = numel / run;
  parallel_for(rows, std::max<std::int64_t>(1, kDefaultGrain / run), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      std::int64_t rest = r, moff = 0;
      for (int d = 1; d < rank; ++d) {
        moff += (rest % size[d]) * mstride[d];
        rest /= size[d];
      }
      const T* xr = x + r * run;
      T* orow = out + r * run;
      const bool* mr = mask + moff;
      if (run_masked_elementwise) {
        for (std::int64_t i = 0; i < run; ++i) orow[i] = mr[i] ? value : xr[i];
      } else if (*mr) {
        for (std::int64_t i = 0; i < run; ++i) orow[i] = value;
      } else if (orow != xr) {
        std::memcpy(orow, xr, static_cast<std::size_t>(run) * sizeof(T));
      }
    }
  });
}

}  // namespace

void index_select_kernel(const OpIr& op, const KernelArgs& args) {
  visit_dtype(op.outputs[0].dtype, "index_select", [&](auto tag) { index_select_typed<decltype(tag)>(op, args); });
}

void masked_fill_kernel(const OpIr& op, const KernelArgs& args) {
  visit_dtype(op.outputs[0].dtype, "masked_fill", [&](auto tag) { masked_fill_typed<decltype(tag)>(op, args); });
}

void one_hot_kernel(const OpIr& op, const KernelArgs& args) {
  const std::int64_t n = op.inputs[0].numel();
  const std::int64_t classes = op.outputs[0].shape.back();
  const std::int64_t* idx = in_ptr<std::int64_t>(args, 0);
  std::int64_t* out = out_ptr<std::int64_t>(args, 0);
  bool bad = false;
  for (std::int64_t i = 0; i < n; ++i) bad |= static_cast<std::uint64_t>(idx[i]) >= static_cast<std::uint64_t>(classes);
  if (bad) {
    for (std::int64_t i = 0; i < n; ++i)
      KILN_CHECK(idx[i] >= 0 && idx[i] < classes, "one_hot",
                 "class value " + std::to_string(idx[i]) + " is out of range [0, " + std::to_string(classes) +
                     ") (indices " + describe(op.inputs[0]) + ")");
  }
  parallel_for(n, std::max<std::int64_t>(1, kDefaultGrain / classes), [&](std::int64_t b, std::int64_t e) {
    std::memset(out + b * classes, 0, static_cast<std::size_t>((e - b) * classes) * sizeof(std::int64_t));
    for (std::int64_t i = b; i < e; ++i) out[i * classes + idx[i]] = 1;
  });
}

}  // namespace kiln::cpu::index
