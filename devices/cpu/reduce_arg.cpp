// CPU kernels of argmax/argmin: the index of the first best element of each row (inner == 1)
// or of each column of [outer, extent, inner]. A NaN counts as better than every number, and
// the first NaN wins, like torch. Long rows are cut into fixed blocks (reduce_driver.h) whose
// candidates merge in block order, so the answer never depends on the threads.
#include <immintrin.h>

#include <algorithm>

#include "kiln/devices/cpu/reduce_driver.h"
#include "kiln/devices/cpu/reduce_ops.h"

namespace kiln::cpu {
namespace {

template <class T, bool kMax>
struct ArgOrder {
  // Is x strictly better than y?
  static bool better(T x, T y) {
    const bool b = kMax ? x > y : x < y;
    if constexpr (std::numeric_limits<T>::has_quiet_NaN)
      return b || (x != x && y == y);
    else
      return b;
  }
};

template <class T>
struct Candidate {
  T value;
  std::int64_t index;
};

// The better candidate; on a tie the earlier index.
template <class O, class T>
Candidate<T> pick(Candidate<T> a, Candidate<T> b) {
  if (O::better(b.value, a.value)) return b;
  if (O::better(a.value, b.value)) return a;
  return b.index < a.index ? b : a;
}

// The first best element of x[0, n), n >= 1, in independent lanes (each keeps its first best).
template <class O, class T>
Candidate<T> arg_run(const T* x, std::int64_t n) {
  constexpr int L = 16;
  if (n < 2 * L) {
    Candidate<T> c{x[0], 0};
    for (std::int64_t i = 1; i < n; ++i)
      if (O::better(x[i], c.value)) c = {x[i], i};
    return c;
  }
  T val[L];
  std::int64_t idx[L];
  for (int l = 0; l < L; ++l) val[l] = x[l], idx[l] = l;
  std::int64_t i = L;
  for (; i + L <= n; i += L) {
    for (int l = 0; l < L; ++l) {
      const bool b = O::better(x[i + l], val[l]);
      val[l] = b ? x[i + l] : val[l];
      idx[l] = b ? i + l : idx[l];
    }
  }
  for (int l = 0; i + l < n; ++l)
    if (O::better(x[i + l], val[l])) val[l] = x[i + l], idx[l] = i + l;
  Candidate<T> c{val[0], idx[0]};
  for (int l = 1; l < L; ++l) c = pick<O>(c, Candidate<T>{val[l], idx[l]});
  return c;
}

#if defined(__AVX512F__)
// f32 rows in two sets of 16 lanes. A run never exceeds kRowBlock elements, so i32 indices do.
template <bool kMax>
Candidate<float> arg_run_f32(const float* x, std::int64_t n) {
  using O = ArgOrder<float, kMax>;
  if (n < 32) return arg_run<O>(x, n);
  static_assert(kRowBlock <= (std::int64_t{1} << 30));
  constexpr int kCmp = kMax ? _CMP_GT_OQ : _CMP_LT_OQ;
  __m512 best0 = _mm512_loadu_ps(x), best1 = _mm512_loadu_ps(x + 16);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i idx0 = iota, idx1 = _mm512_add_epi32(iota, _mm512_set1_epi32(16));
  auto update = [&](__m512& best, __m512i& idx, __m512 v, std::int64_t at, __mmask16 valid) {
    const __mmask16 nan_v = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __mmask16 nan_b = _mm512_cmp_ps_mask(best, best, _CMP_UNORD_Q);
    const __mmask16 m = valid & (_mm512_cmp_ps_mask(v, best, kCmp) | (nan_v & ~nan_b));
    best = _mm512_mask_mov_ps(best, m, v);
    idx = _mm512_mask_mov_epi32(idx, m, _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(at))));
  };
  std::int64_t i = 32;
  for (; i + 32 <= n; i += 32) {
    update(best0, idx0, _mm512_loadu_ps(x + i), i, 0xFFFF);
    update(best1, idx1, _mm512_loadu_ps(x + i + 16), i + 16, 0xFFFF);
  }
  for (; i < n; i += 16) {
    const __mmask16 valid = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1u);
    update(best0, idx0, _mm512_maskz_loadu_ps(valid, x + i), i, valid);
  }
  alignas(64) float val[32];
  alignas(64) std::int32_t at[32];
  _mm512_store_ps(val, best0), _mm512_store_ps(val + 16, best1);
  _mm512_store_si512(at, idx0), _mm512_store_si512(at + 16, idx1);
  Candidate<float> c{val[0], at[0]};
  for (int l = 1; l < 32; ++l) c = pick<O>(c, Candidate<float>{val[l], at[l]});
  return c;
}
#endif

// The first best element of a run, by the fastest loop for T.
template <class O, class T>
Candidate<T> arg_block(const T* x, std::int64_t n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) return arg_run_f32<std::is_same_v<O, ArgOrder<float, true>>>(x, n);
#endif
  return arg_run<O>(x, n);
}

template <class O, class T>
void arg_rows(const T* x, std::int64_t* y, std::int64_t outer, std::int64_t n) {
  const std::int64_t blocks = detail::ceil_div(n, kRowBlock);
  if (blocks == 1) {
    parallel_for(outer, detail::grain_for(n), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t o = b; o < e; ++o) y[o] = arg_block<O>(x + o * n, n).index;
    });
    return;
  }
  std::vector<Candidate<T>> partial(static_cast<std::size_t>(outer * blocks));
  parallel_for(outer * blocks, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t t = b; t < e; ++t) {
      const std::int64_t o = t / blocks, start = (t % blocks) * kRowBlock;
      Candidate<T> c = arg_block<O>(x + o * n + start, std::min(kRowBlock, n - start));
      partial[t] = {c.value, c.index + start};
    }
  });
  for (std::int64_t o = 0; o < outer; ++o) {
    Candidate<T> c = partial[o * blocks];
    for (std::int64_t b = 1; b < blocks; ++b) c = pick<O>(c, partial[o * blocks + b]);
    y[o] = c.index;
  }
}

template <class O, class T>
void arg_cols(const T* x, std::int64_t* y, const ReduceGeometry& g) {
  const std::int64_t tiles = detail::ceil_div(g.inner, kTile);
  parallel_for(g.outer * tiles, detail::grain_for(g.extent * std::min(g.inner, kTile)),
               [&](std::int64_t b, std::int64_t e) {
                 T best[kTile];
                 for (std::int64_t t = b; t < e; ++t) {
                   const std::int64_t o = t / tiles, j0 = (t % tiles) * kTile, w = std::min(kTile, g.inner - j0);
                   const T* base = x + o * g.extent * g.inner + j0;
                   std::int64_t* idx = y + o * g.inner + j0;
                   for (std::int64_t j = 0; j < w; ++j) best[j] = base[j], idx[j] = 0;
                   for (std::int64_t r = 1; r < g.extent; ++r) {
                     const T* row = base + r * g.inner;
                     for (std::int64_t j = 0; j < w; ++j) {
                       const bool better = O::better(row[j], best[j]);
                       best[j] = better ? row[j] : best[j];
                       idx[j] = better ? r : idx[j];
                     }
                   }
                 }
               });
}

template <class T, bool kMax>
void arg_typed(const OpIr& op, const KernelArgs& a) {
  using O = ArgOrder<T, kMax>;
  const Shape& s = op.inputs[0].shape;
  const T* x = in_ptr<T>(a, 0);
  std::int64_t* y = out_ptr<std::int64_t>(a, 0);
  if (op.outputs[0].numel() == 0) return;
  if (!op.attrs.flag || s.rank() == 0) return arg_rows<O>(x, y, 1, s.numel());
  const ReduceGeometry g = geometry_along_dim(s, static_cast<int>(op.attrs.dim));
  if (g.inner == 1)
    arg_rows<O>(x, y, g.outer, g.extent);
  else
    arg_cols<O>(x, y, g);
}

template <bool kMax>
void arg_kernel(const OpIr& op, const KernelArgs& a) {
  switch (op.inputs[0].dtype) {
    case DType::f32: return arg_typed<float, kMax>(op, a);
    case DType::i64: return arg_typed<std::int64_t, kMax>(op, a);
    default: throw Error(op_name(op.kind), "input " + describe(op.inputs[0]) + ": dtype not supported");
  }
}

}  // namespace

void register_reduce_arg_kernels(KernelTable& t) {
  t.set(OpKind::argmax, arg_kernel<true>);
  t.set(OpKind::argmin, arg_kernel<false>);
}

}  // namespace kiln::cpu
