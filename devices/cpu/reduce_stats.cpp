// CPU kernels of the two-pass statistics: var/std (mean, then the sum of squared deviations
// from it, in f64) and logsumexp (max, then the sum of exp(x - max)). The first pass's result
// is the per-output operand of the second pass's prologue. Under a fused prologue both passes
// pull their values from it: the prologue is evaluated twice instead of stored.
#include <algorithm>

#include "kiln/devices/cpu/reduce_driver.h"
#include "kiln/devices/cpu/reduce_ops.h"
#include "kiln/devices/cpu/reduce_vector_math.h"

namespace kiln::cpu {
namespace {

// (x - centre)^2 in f64.
struct SquaredDeviation {
  using In = float;
  using Value = double;
  static constexpr bool kStaged = true;
  const double* centre;
  void operator()(const float* x, std::int64_t at, double* y, std::int64_t n, std::int64_t k,
                  std::int64_t k_stride) const {
    for (std::int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(x[at + i]) - centre[k + i * k_stride];
      y[i] = d * d;
    }
  }
};

struct VarianceOf {
  double divisor;
  bool take_sqrt;
  float operator()(double sum_sq, std::int64_t) const {
    const double v = sum_sq / divisor;
    return static_cast<float>(take_sqrt ? std::sqrt(v) : v);
  }
};

template <class Reader>
void variance_f32(const OpIr& op, const Reader& in, const float* x, float* y, const ReduceGeometry& g) {
  const auto n = static_cast<double>(reduced_count(op));
  // torch: the divisor is clamped at 0, so a correction >= n gives inf (or nan for 0 / 0).
  const double divisor = std::max(0.0, n - op.attrs.scalar);
  std::vector<double> mean(static_cast<std::size_t>(g.outputs()));
  reduce_canonical(SumReducer<double>{}, in.plain(), DivideBy<double>{n}, x, mean.data(), g);
  reduce_canonical(SumReducer<double>{}, in.staged(SquaredDeviation{mean.data()}),
                   VarianceOf{divisor, op.kind == OpKind::std}, x, y, g);
}

void variance_kernel(const OpIr& op, const KernelArgs& a) {
  KILN_CHECK(op.inputs[0].dtype == DType::f32, op_name(op.kind), "input " + describe(op.inputs[0]) + " must be f32");
  float* y = out_ptr<float>(a, 0);
  with_canonical_input<float>(op, a, [&](const float* x, const ReduceGeometry& g) { stats_f32(op, nullptr, x, y, g); });
}

// exp(x - shift), vectorized (devices/cpu/fast_exp.h).
struct ExpShifted {
  using In = float;
  using Value = float;
  static constexpr bool kStaged = true;
  const float* shift;
  void operator()(const float* x, std::int64_t at, float* y, std::int64_t n, std::int64_t k,
                  std::int64_t k_stride) const {
    exp_shifted(x + at, shift + k, k_stride, y, n);
  }
};

// The shift of logsumexp is the max, except that an infinite max shifts by 0 (torch): all
// -inf gives log(0) = -inf, and +inf gives inf instead of inf - inf.
struct ShiftOf {
  float operator()(float m, std::int64_t) const { return std::isinf(m) ? 0.0f : m; }
};

struct LogPlusShift {
  const float* shift;
  float operator()(float sum, std::int64_t k) const { return std::log(sum) + shift[k]; }
};

template <class Reader>
void logsumexp_f32(const Reader& in, const float* x, float* y, const ReduceGeometry& g) {
  std::vector<float> shift(static_cast<std::size_t>(g.outputs()));
  reduce_canonical(ExtremumReducer<float, true>{}, in.plain(), ShiftOf{}, x, shift.data(), g);
  reduce_canonical(SumReducer<float>{}, in.staged(ExpShifted{shift.data()}), LogPlusShift{shift.data()}, x, y, g);
}

template <class T>
void logsumexp_promoted(const OpIr& op, const KernelArgs& a) {
  // Integer inputs compute in f32, like torch's promotion.
  with_canonical_input<T>(op, a, [&](const T* x, const ReduceGeometry& g) {
    std::vector<float> xf(static_cast<std::size_t>(g.outer * g.extent * g.inner));
    for (std::size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>(x[i]);
    stats_f32(op, nullptr, xf.data(), out_ptr<float>(a, 0), g);
  });
}

void logsumexp_kernel(const OpIr& op, const KernelArgs& a) {
  switch (op.inputs[0].dtype) {
    case DType::f32:
      with_canonical_input<float>(
          op, a, [&](const float* x, const ReduceGeometry& g) { stats_f32(op, nullptr, x, out_ptr<float>(a, 0), g); });
      return;
    case DType::i64: return logsumexp_promoted<std::int64_t>(op, a);
    case DType::bool_: return logsumexp_promoted<std::uint8_t>(op, a);
    default: throw Error(op_name(op.kind), "input " + describe(op.inputs[0]) + ": dtype not supported");
  }
}

template <class Reader>
void stats_with(const OpIr& op, const Reader& in, const float* x, float* y, const ReduceGeometry& g) {
  switch (op.kind) {
    case OpKind::var:
    case OpKind::std: return variance_f32(op, in, x, y, g);
    case OpKind::logsumexp: return logsumexp_f32(in, x, y, g);
    default: throw Error(op_name(op.kind), "not a statistic (internal error)");
  }
}

}  // namespace

void stats_f32(const OpIr& op, const ReduceSource* source, const float* x, float* y, const ReduceGeometry& g) {
  if (source)
    stats_with(op, SourceReader{source}, nullptr, y, g);
  else
    stats_with(op, MemoryReader{}, x, y, g);
}

void register_reduce_stat_kernels(KernelTable& t) {
  t.set(OpKind::var, variance_kernel);
  t.set(OpKind::std, variance_kernel);
  t.set(OpKind::logsumexp, logsumexp_kernel);
}

}  // namespace kiln::cpu
