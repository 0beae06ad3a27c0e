// The reducers, prologues and epilogues of the CPU reduce kernels (see reduce_driver.h for the
// three roles), plus the entry that runs one on a reduction's input. Each step is a lane-wise
// expression the compiler turns into vector code.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/reduce_layout.h"

namespace kiln::cpu {

// i64 sums and products wrap on overflow, like torch's, without signed-overflow UB.
template <class A>
A add_wrapping(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class A>
A mul_wrapping(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <class A>
struct SumReducer {
  using Acc = A;
  Acc identity() const { return Acc(0); }
  template <class V>
  Acc step(Acc a, V x) const {
    return add_wrapping(a, static_cast<Acc>(x));
  }
  Acc merge(Acc a, Acc b) const { return add_wrapping(a, b); }
};

template <class A>
struct ProdReducer {
  using Acc = A;
  Acc identity() const { return Acc(1); }
  template <class V>
  Acc step(Acc a, V x) const {
    return mul_wrapping(a, static_cast<Acc>(x));
  }
  Acc merge(Acc a, Acc b) const { return mul_wrapping(a, b); }
};

// max/min keep the dtype; a NaN wins over every number, like torch.
template <class A, bool kMax>
struct ExtremumReducer {
  using Acc = A;
  Acc identity() const {
    if constexpr (std::numeric_limits<A>::has_infinity)
      return kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    else
      return kMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
  }
  Acc step(Acc a, Acc x) const {
    const bool better = kMax ? x > a : x < a;
    if constexpr (std::numeric_limits<A>::has_quiet_NaN)
      return (better || x != x) ? x : a;
    else
      return better ? x : a;
  }
  Acc merge(Acc a, Acc b) const { return step(a, b); }
};

// any/all over any dtype: a value counts as true when it is nonzero (NaN is nonzero).
template <bool kAny>
struct TruthReducer {
  using Acc = std::uint8_t;
  Acc identity() const { return kAny ? 0 : 1; }
  template <class V>
  Acc step(Acc a, V x) const {
    const Acc t = x != V(0);
    return kAny ? (a | t) : (a & t);
  }
  Acc merge(Acc a, Acc b) const { return kAny ? (a | b) : (a & b); }
};

// Epilogues.
template <class Out>
struct StoreAs {
  template <class Acc>
  Out operator()(Acc a, std::int64_t) const {
    return static_cast<Out>(a);
  }
};
template <class Out>
struct DivideBy {
  double count;
  template <class Acc>
  Out operator()(Acc a, std::int64_t) const {
    return static_cast<Out>(a / static_cast<Acc>(count));
  }
};

// The typed element pointer of a buffer; bool tensors are bytes.
template <class T>
using Storage = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

// The dims a dims reduction folds: attrs.ints, where empty means all (ops/op_list.def).
std::vector<std::int64_t> reduced_dims(const OpIr& op);
// How many input elements fold into one output (1 for a 0-d input).
std::int64_t reduced_count(const OpIr& op);

// Calls fn(const T* x, const ReduceGeometry& g) on the canonical view of op's input, gathering
// it into scratch first when its reduced dims are not adjacent.
template <class T, class Fn>
void with_canonical_input(const OpIr& op, const KernelArgs& a, Fn&& fn) {
  const ReduceLayout layout = plan_reduce_layout(op.inputs[0].shape, reduced_dims(op));
  const T* x = static_cast<const T*>(a.inputs[0]->data());
  if (!layout.needs_gather) {
    fn(x, layout.geometry);
    return;
  }
  std::vector<T> scratch(static_cast<std::size_t>(op.inputs[0].numel()));
  gather_reduced_last(x, scratch.data(), layout);
  fn(static_cast<const T*>(scratch.data()), layout.geometry);
}

// The input of a reduction computed as it is read: a fused prologue (fused_anchor.cpp).
class ReduceSource {
 public:
  virtual ~ReduceSource() = default;
  // Elements [at, at + n) of the reduction's input, in its row-major order, into dst.
  virtual void fill(std::int64_t at, float* dst, std::int64_t n) const = 0;
};

// Pulls values from a ReduceSource: the driver's staged prologue form, never reading x.
struct SourceInput {
  using In = float;
  using Value = float;
  static constexpr bool kStaged = true;
  const ReduceSource* source;
  void operator()(const float*, std::int64_t at, float* y, std::int64_t n, std::int64_t, std::int64_t) const {
    source->fill(at, y, n);
  }
};

// A staged prologue on memory (Inner) applied to values pulled from a ReduceSource: a
// statistic's second pass ((x - mean)^2, exp(x - max)) over a fused prologue. The driver asks
// for at most kTile elements at a time.
template <class Inner>
struct PulledInput {
  using In = float;
  using Value = typename Inner::Value;
  static constexpr bool kStaged = true;
  const ReduceSource* source;
  Inner inner;
  void operator()(const float*, std::int64_t at, Value* y, std::int64_t n, std::int64_t k,
                  std::int64_t k_stride) const {
    alignas(64) float v[kTile];
    source->fill(at, v, n);
    inner(v, 0, y, n, k, k_stride);
  }
};

// Where an f32 reduction reads its input: the canonical view in memory (x), or a source (x is
// null). plain() is the prologue that reads values as they are, staged(p) runs a staged
// prologue p on them. Kernels templated on the reader run the same arithmetic either way, so
// fused and unfused results agree bit for bit.
struct MemoryReader {
  PlainInput<float> plain() const { return {}; }
  template <class P>
  P staged(const P& p) const {
    return p;
  }
};
struct SourceReader {
  const ReduceSource* source;
  SourceInput plain() const { return {source}; }
  template <class P>
  PulledInput<P> staged(const P& p) const {
    return {source, p};
  }
};

// Runs the f32 op `op` (any anchors_prologue op) with its input pulled from `source` a piece at
// a time, writing y. The arithmetic is the unfused kernel's, so fused and unfused results agree
// bit for bit.
void reduce_from_source(const OpIr& op, const ReduceSource& source, float* y);

// The f32 statistics (var, std, logsumexp) and softmax / log_softmax on the canonical view
// g: from memory x when source is null, else from source (x null). reduce_stats.cpp and
// reduce_softmax.cpp.
void stats_f32(const OpIr& op, const ReduceSource* source, const float* x, float* y, const ReduceGeometry& g);
void softmax_f32(const OpIr& op, const ReduceSource* source, const float* x, float* y);

// Registration of the kernels that live in other reduce_*.cpp files.
void register_reduce_arg_kernels(KernelTable& t);
void register_reduce_scan_kernels(KernelTable& t);
void register_reduce_softmax_kernels(KernelTable& t);
void register_reduce_stat_kernels(KernelTable& t);

}  // namespace kiln::cpu
