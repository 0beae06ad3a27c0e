// CPU kernels of the creation family. Random values hash (seed, draw, element index) with
// SplitMix64, so a draw is the same whatever the number of threads.
#include <cmath>
#include <numbers>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/ops/attrs_creation.h"

namespace kiln::cpu {
namespace {

template <class Fn> void fill_by_index(const OpIr& op, const KernelArgs& a, Fn&& value_at) {
  const std::int64_t n = op.outputs[0].numel();
  switch (op.outputs[0].dtype) {
    case DType::f32: {
      float* o = out_ptr<float>(a, 0);
      parallel_for(n, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) o[i] = static_cast<float>(value_at(i));
      });
      break;
    }
    case DType::i64: {
      std::int64_t* o = out_ptr<std::int64_t>(a, 0);
      parallel_for(n, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) o[i] = static_cast<std::int64_t>(value_at(i));
      });
      break;
    }
    case DType::bool_: {
      bool* o = out_ptr<bool>(a, 0);
      parallel_for(n, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) o[i] = value_at(i) != 0;
      });
      break;
    }
    default: throw Error(op_name(op.kind), "unsupported dtype on the CPU");
  }
}

void full_kernel(const OpIr& op, const KernelArgs& a) {
  const double v = FullAttrs::decode(op.kind, op.attrs).value;
  fill_by_index(op, a, [v](std::int64_t) { return v; });
}

void arange_kernel(const OpIr& op, const KernelArgs& a) {
  const ArangeAttrs r = ArangeAttrs::decode(op.kind, op.attrs);
  const double start = r.start, step = r.step;
  fill_by_index(op, a, [=](std::int64_t i) { return start + static_cast<double>(i) * step; });
}

void linspace_kernel(const OpIr& op, const KernelArgs& a) {
  // torch's formula: fill from both ends so that the last element is exactly `end`.
  const std::int64_t steps = op.outputs[0].numel();
  const LinspaceAttrs r = LinspaceAttrs::decode(op.kind, op.attrs);
  const double start = r.start, end = r.end;
  if (op.outputs[0].dtype == DType::f32) {
    const float fs = static_cast<float>(start), fe = static_cast<float>(end);
    const float step = steps > 1 ? (fe - fs) / static_cast<float>(steps - 1) : 0.0f;
    const std::int64_t half = steps / 2;
    float* o = out_ptr<float>(a, 0);
    for (std::int64_t i = 0; i < steps; ++i)
      o[i] = i < half ? fs + step * static_cast<float>(i) : fe - step * static_cast<float>(steps - i - 1);
    return;
  }
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  fill_by_index(op, a, [=](std::int64_t i) { return start + step * static_cast<double>(i); });
}

void eye_kernel(const OpIr& op, const KernelArgs& a) {
  const std::int64_t m = op.outputs[0].shape[1];
  fill_by_index(op, a, [m](std::int64_t i) { return (i / m == i % m) ? 1.0 : 0.0; });
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits.
double unit(std::uint64_t seed, std::uint64_t i, std::uint64_t lane) {
  return static_cast<double>(splitmix64(seed ^ splitmix64(i * 2 + lane)) >> 11) * 0x1.0p-53;
}

void uniform_kernel(const OpIr& op, const KernelArgs& a) {
  const UniformAttrs u = UniformAttrs::decode(op.kind, op.attrs);
  const double lo = u.low, hi = u.high;
  const std::uint64_t seed = u.seed;
  fill_by_index(op, a, [=](std::int64_t i) {
    double v = lo + (hi - lo) * unit(seed, static_cast<std::uint64_t>(i), 0);
    // Rounding to f32 can land on `hi`; keep the interval half-open.
    if (static_cast<float>(v) >= static_cast<float>(hi) && hi > lo) v = std::nextafter(static_cast<float>(hi), -INFINITY);
    return v;
  });
}

void normal_kernel(const OpIr& op, const KernelArgs& a) {
  const NormalAttrs r = NormalAttrs::decode(op.kind, op.attrs);
  const double mean = r.mean, stddev = r.std;
  const std::uint64_t seed = r.seed;
  fill_by_index(op, a, [=](std::int64_t i) {
    // Box-Muller on two independent uniforms of the same element.
    const double u1 = 1.0 - unit(seed, static_cast<std::uint64_t>(i), 0);
    const double u2 = unit(seed, static_cast<std::uint64_t>(i), 1);
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  });
}

void bernoulli_kernel(const OpIr& op, const KernelArgs& a) {
  const BernoulliAttrs r = BernoulliAttrs::decode(op.kind, op.attrs);
  const double p = r.p;
  const std::uint64_t seed = r.seed;
  fill_by_index(op, a, [=](std::int64_t i) { return unit(seed, static_cast<std::uint64_t>(i), 0) < p ? 1.0 : 0.0; });
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  // The table every device shares (devices/kernel_tables.def).
#define KILN_CREATION_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::cpu
