// CPU kernel of cumsum along one dim of [outer, extent, inner]: rows scan sequentially, columns
// scan a tile of running sums vectorized over the inner dim. f32 accumulates in f64 (torch's
// CPU accumulate type); bool and i64 give i64. The output may be the input's buffer: element k
// is read before it is written.
#include <algorithm>

#include "kiln/devices/cpu/reduce_driver.h"
#include "kiln/devices/cpu/reduce_ops.h"

namespace kiln::cpu {
namespace {

template <class In, class Acc, class Out>
void scan(const In* x, Out* y, const ReduceGeometry& g) {
  if (g.outer * g.extent * g.inner == 0) return;
  if (g.inner == 1) {
    parallel_for(g.outer, detail::grain_for(g.extent), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t o = b; o < e; ++o) {
        Acc acc = 0;
        for (std::int64_t r = 0; r < g.extent; ++r) {
          acc = add_wrapping(acc, static_cast<Acc>(x[o * g.extent + r]));
          y[o * g.extent + r] = static_cast<Out>(acc);
        }
      }
    });
    return;
  }
  const std::int64_t tiles = detail::ceil_div(g.inner, kTile);
  parallel_for(g.outer * tiles, detail::grain_for(g.extent * std::min(g.inner, kTile)),
               [&](std::int64_t b, std::int64_t e) {
                 Acc acc[kTile];
                 for (std::int64_t t = b; t < e; ++t) {
                   const std::int64_t o = t / tiles, j0 = (t % tiles) * kTile, w = std::min(kTile, g.inner - j0);
                   std::fill(acc, acc + w, Acc(0));
                   for (std::int64_t r = 0; r < g.extent; ++r) {
                     const std::int64_t off = (o * g.extent + r) * g.inner + j0;
                     for (std::int64_t j = 0; j < w; ++j) {
                       acc[j] = add_wrapping(acc[j], static_cast<Acc>(x[off + j]));
                       y[off + j] = static_cast<Out>(acc[j]);
                     }
                   }
                 }
               });
}

void cumsum_kernel(const OpIr& op, const KernelArgs& a) {
  const ReduceGeometry g = geometry_along_dim(op.inputs[0].shape, static_cast<int>(op.attrs.dim));
  switch (op.inputs[0].dtype) {
    case DType::f32: return scan<float, double>(in_ptr<float>(a, 0), out_ptr<float>(a, 0), g);
    case DType::i64:
      return scan<std::int64_t, std::int64_t>(in_ptr<std::int64_t>(a, 0), out_ptr<std::int64_t>(a, 0), g);
    case DType::bool_:
      return scan<std::uint8_t, std::int64_t>(in_ptr<std::uint8_t>(a, 0), out_ptr<std::int64_t>(a, 0), g);
    default: throw Error(op_name(op.kind), "input " + describe(op.inputs[0]) + ": dtype not supported");
  }
}

}  // namespace

void register_reduce_scan_kernels(KernelTable& t) { t.set(OpKind::cumsum, cumsum_kernel); }

}  // namespace kiln::cpu
