// gather, scatter and scatter_add. The index's elements are walked as units (one coordinate in
// every dim but `dim` and the last) times J positions along `dim` times a contiguous run along the
// last dim, so the innermost loop is contiguous in every tensor. Scatter writes of two different
// units never meet (they differ in a coordinate other than `dim`), so units run in parallel while
// the positions of one unit, which may repeat an index, run in order.
#include <algorithm>
#include <cstring>
#include <memory>

#include "kiln/devices/cpu/index_kernels.h"
#include "kiln/devices/cpu/parallel.h"

namespace kiln::cpu::index {
namespace {

struct Walk {
  IndexDims index, x, other;  // `other`: the output of gather, the src of scatter
  int dim = 0;
  bool dim_is_last = false;
  std::int64_t J = 0;  // index positions along dim
  std::int64_t L = 1;  // contiguous run along the last dim (1 when dim is the last dim)
  std::int64_t units = 1;
  int unit_dims[kMaxRank] = {};
  int n_unit_dims = 0;

  Walk(const OpIr& op, const Shape& other_shape)
      : index(index_dims(op.inputs[1].shape)), x(index_dims(op.inputs[0].shape)), other(index_dims(other_shape)) {
    dim = index_op_dim(op, index.rank);
    dim_is_last = dim == index.rank - 1;
    J = index.size[dim];
    if (!dim_is_last) L = index.size[index.rank - 1];
    for (int d = 0; d < index.rank - (dim_is_last ? 0 : 1); ++d) {
      if (d == dim) continue;
      unit_dims[n_unit_dims++] = d;
      units *= index.size[d];
    }
  }

  // Offsets of unit u in the index, x and other.
  void offsets(std::int64_t u, std::int64_t& io, std::int64_t& xo, std::int64_t& oo) const {
    io = xo = oo = 0;
    for (int q = n_unit_dims - 1; q >= 0; --q) {
      const int d = unit_dims[q];
      const std::int64_t c = u % index.size[d];
      u /= index.size[d];
      io += c * index.stride[d];
      xo += c * x.stride[d];
      oo += c * other.stride[d];
    }
  }
};

template <class T>
void gather_typed(const OpIr& op, const KernelArgs& args) {
  if (op.outputs[0].numel() == 0) return;
  const Walk w(op, op.outputs[0].shape);
  const T* x = in_ptr<T>(args, 0);
  const std::int64_t* idx = in_ptr<std::int64_t>(args, 1);
  T* out = out_ptr<T>(args, 0);
  const std::int64_t x_size = w.x.size[w.dim], x_step = w.x.stride[w.dim], i_step = w.index.stride[w.dim];
  // Rows are (unit, j) pairs of L elements each; a chunk of rows may span several units.
  parallel_for(w.units * w.J, std::max<std::int64_t>(1, kDefaultGrain / w.L), [&](std::int64_t b, std::int64_t e) {
    std::int64_t u = b / w.J, j = b % w.J, io, xo, out_offset;
    while (b < e) {
      w.offsets(u, io, xo, out_offset);  // the output has the index's shape: out_offset == io
      const std::int64_t j_end = std::min(w.J, j + (e - b));
      const T* xs = x + xo;
      if (w.dim_is_last) {
        const std::int64_t* ip = idx + io;
        T* dst = out + io;
        check_indices(op, ip + j, j_end - j, w.dim, x_size);
        for (std::int64_t q = j; q < j_end; ++q) dst[q] = xs[ip[q]];
      } else {
        for (std::int64_t q = j; q < j_end; ++q) {
          const std::int64_t* ip = idx + io + q * i_step;
          T* dst = out + io + q * i_step;
          check_indices(op, ip, w.L, w.dim, x_size);
          for (std::int64_t l = 0; l < w.L; ++l) dst[l] = xs[ip[l] * x_step + l];
        }
      }
      b += j_end - j;
      ++u;
      j = 0;
    }
  });
}

// Keeps a copy of an input whose buffer the executor gave to the output (the in-place rule
// matched the index or src rather than x), so copying x into the output cannot clobber it.
template <class T>
const T* detach_if_aliased(const T* input, std::int64_t n, const void* out, std::unique_ptr<T[]>& keep) {
  if (static_cast<const void*>(input) != out) return input;
  keep = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(n));
  std::copy_n(input, n, keep.get());
  return keep.get();
}

template <class T, bool kAdd>
void scatter_typed(const OpIr& op, const KernelArgs& args) {
  const Walk w(op, op.inputs[2].shape);
  T* out = out_ptr<T>(args, 0);
  std::unique_ptr<std::int64_t[]> index_copy;
  std::unique_ptr<T[]> src_copy;
  const std::int64_t* idx = detach_if_aliased(in_ptr<std::int64_t>(args, 1), op.inputs[1].numel(), out, index_copy);
  const T* src = detach_if_aliased(in_ptr<T>(args, 2), op.inputs[2].numel(), out, src_copy);
  const T* x = in_ptr<T>(args, 0);
  if (x != out) {
    parallel_for(op.outputs[0].numel(), [&](std::int64_t b, std::int64_t e) {
      std::memcpy(out + b, x + b, static_cast<std::size_t>(e - b) * sizeof(T));
    });
  }
  if (op.inputs[1].numel() == 0) return;
  const std::int64_t x_size = w.x.size[w.dim], x_step = w.x.stride[w.dim];
  const std::int64_t i_step = w.index.stride[w.dim], s_step = w.other.stride[w.dim];
  auto put = [](T& dst, T v) {
    if constexpr (!kAdd)
      dst = v;
    else if constexpr (std::is_same_v<T, bool>)
      dst = dst || v;
    else
      dst += v;
  };
  parallel_for(w.units, std::max<std::int64_t>(1, kDefaultGrain / (w.J * w.L)), [&](std::int64_t b, std::int64_t e) {
    std::int64_t io, xo, so;
    for (std::int64_t u = b; u < e; ++u) {
      w.offsets(u, io, xo, so);
      T* os = out + xo;
      if (w.dim_is_last) {
        const std::int64_t* ip = idx + io;
        const T* sp = src + so;
        check_indices(op, ip, w.J, w.dim, x_size);
        for (std::int64_t q = 0; q < w.J; ++q) put(os[ip[q]], sp[q]);
      } else {
        for (std::int64_t q = 0; q < w.J; ++q) {
          const std::int64_t* ip = idx + io + q * i_step;
          const T* sp = src + so + q * s_step;
          check_indices(op, ip, w.L, w.dim, x_size);
          for (std::int64_t l = 0; l < w.L; ++l) put(os[ip[l] * x_step + l], sp[l]);
        }
      }
    }
  });
}

}  // namespace

void gather_kernel(const OpIr& op, const KernelArgs& args) {
  visit_dtype(op.outputs[0].dtype, "gather", [&](auto tag) { gather_typed<decltype(tag)>(op, args); });
}

void scatter_kernel(const OpIr& op, const KernelArgs& args) {
  visit_dtype(op.outputs[0].dtype, "scatter", [&](auto tag) { scatter_typed<decltype(tag), false>(op, args); });
}

void scatter_add_kernel(const OpIr& op, const KernelArgs& args) {
  visit_dtype(op.outputs[0].dtype, "scatter_add", [&](auto tag) { scatter_typed<decltype(tag), true>(op, args); });
}

}  // namespace kiln::cpu::index
