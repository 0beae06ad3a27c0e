#include "kiln/engine/window_args.h"

#include "kiln/engine/creation.h"
#include "kiln/engine/elementwise.h"
#include "kiln/engine/index.h"
#include "kiln/engine/layout.h"
#include "kiln/engine/reduce.h"

namespace kiln::detail {

Window per_dim(const char* op, const char* what, const Window& w, int dims, std::int64_t min_value) {
  KILN_CHECK(w.size() == 1 || static_cast<int>(w.size()) == dims, op,
             std::string(what) + " " + ints_str(w) + " must hold one value or one per spatial dim (" +
                 std::to_string(dims) + ")");
  Window out = w.size() == 1 ? Window(static_cast<std::size_t>(dims), w[0]) : w;
  for (std::int64_t v : out)
    KILN_CHECK(v >= min_value, op,
               std::string(what) + " " + ints_str(w) + " must be at least " + std::to_string(min_value));
  return out;
}

BatchedInput batched_input(const char* op, const Tensor& x, int dims, bool allow_unbatched) {
  KILN_CHECK(x.defined(), op, "the input is an undefined tensor");
  const int rank = x.rank();
  KILN_CHECK(rank == dims + 2 || (allow_unbatched && rank == dims + 1), op,
             "expected an input [N, C, ...] with " + std::to_string(dims) + " spatial dim" + (dims > 1 ? "s" : "") +
                 (allow_unbatched ? " (or unbatched [C, ...])" : std::string()) + ", got " + describe(x));
  KILN_CHECK(is_floating(x.dtype()), op, "expected a floating-point input, got " + describe(x));
  if (rank == dims + 2) return {x, false};
  return {unsqueeze(x, 0), true};
}

Tensor unbatched_result(Tensor y, bool unbatched) { return unbatched ? squeeze(std::move(y), 0) : y; }

Tensor to_spatial(Tensor y, std::int64_t n, std::int64_t c, const Window& out) {
  std::vector<std::int64_t> shape{n, c};
  shape.insert(shape.end(), out.begin(), out.end());
  return reshape(std::move(y), shape);
}

PoolResult max_of_windows(Tensor windows, const WindowCoords& coords, bool with_indices) {
  const std::int64_t n = windows.size(0), c = windows.size(1), kk = windows.size(2), count = windows.size(3);
  PoolResult r;
  if (with_indices) {
    Tensor choice = argmax(windows, 2);  // [N, C, L]: the first maximum, the one max's rule picks
    // table[k * L + l]: the flat plane position of kernel offset k of window l.
    const int dims = static_cast<int>(coords.kernel.size());
    std::vector<std::int64_t> table(static_cast<std::size_t>(kk * count), 0);
    for (std::int64_t k = 0; k < kk; ++k)
      for (std::int64_t l = 0; l < count; ++l) {
        std::int64_t at = 0, krest = k, lrest = l, kdiv = kk, ldiv = count;
        for (int d = 0; d < dims; ++d) {
          kdiv /= coords.kernel[d];
          ldiv /= coords.out[d];
          const std::int64_t a = krest / kdiv, i = lrest / ldiv;
          krest %= kdiv;
          lrest %= ldiv;
          at = at * coords.in[d] + coords.along[d][static_cast<std::size_t>(i * coords.kernel[d] + a)];
        }
        table[static_cast<std::size_t>(k * count + l)] = at;
      }
    Tensor flat = add(mul(std::move(choice), static_cast<double>(count)),
                      arange(0.0, static_cast<double>(count), 1.0, {DType::i64, windows.device()}));
    Tensor picked = index_select(from_vector(std::move(table), Shape{kk * count}, windows.device()), 0,
                                 reshape(std::move(flat), {n * c * count}));
    r.indices = to_spatial(std::move(picked), n, c, coords.out);
  }
  r.values = to_spatial(max(std::move(windows), {2}), n, c, coords.out);
  return r;
}

Tensor constant(std::vector<float> values, const Shape& shape, DType dtype, Device device) {
  Tensor t = from_vector(std::move(values), shape, device);
  return dtype == DType::f32 ? t : cast(std::move(t), dtype);
}

}  // namespace kiln::detail
