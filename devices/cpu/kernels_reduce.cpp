// CPU kernels of the plain reductions (sum, mean, prod, max, min, any, all): one reducer each
// on the shared drivers. The statistics (var, std, logsumexp), argmax/argmin, cumsum and
// softmax live in the other reduce_*.cpp files.
#include "kiln/devices/cpu/reduce_driver.h"
#include "kiln/devices/cpu/reduce_ops.h"

namespace kiln::cpu {

std::vector<std::int64_t> reduced_dims(const OpIr& op) {
  if (!op.attrs.ints.empty()) return op.attrs.ints;
  std::vector<std::int64_t> all(static_cast<std::size_t>(op.inputs[0].shape.rank()));
  for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<std::int64_t>(d);
  return all;
}

std::int64_t reduced_count(const OpIr& op) {
  std::int64_t n = 1;
  for (std::int64_t d : reduced_dims(op)) n *= op.inputs[0].shape[static_cast<int>(d)];
  return n;
}

namespace {

template <class In, class Out, class R, class E>
void reduce_kernel(const OpIr& op, const KernelArgs& a, const R& r, const E& e) {
  auto* y = static_cast<Storage<Out>*>(a.outputs[0]->data());
  if (const ReduceLayout l = plan_reduce_layout(op.inputs[0].shape, reduced_dims(op)); l.split) {
    const auto* x = static_cast<const Storage<In>*>(a.inputs[0]->data());
    return reduce_split(r, PlainInput<Storage<In>>{}, e, x, y, l.reduced[0].size, l.kept[0].size, l.reduced[1].size);
  }
  with_canonical_input<Storage<In>>(op, a, [&](const Storage<In>* x, const ReduceGeometry& g) {
    reduce_canonical(r, PlainInput<Storage<In>>{}, e, x, y, g);
  });
}

[[noreturn]] void unsupported(const OpIr& op) {
  throw Error(op_name(op.kind), "input " + describe(op.inputs[0]) + ": dtype not supported by the CPU kernel");
}

void sum_kernel(const OpIr& op, const KernelArgs& a) {
  switch (op.inputs[0].dtype) {
    case DType::f32: return reduce_kernel<float, float>(op, a, SumReducer<float>{}, StoreAs<float>{});
    case DType::i64:
      return reduce_kernel<std::int64_t, std::int64_t>(op, a, SumReducer<std::int64_t>{}, StoreAs<std::int64_t>{});
    case DType::bool_:
      return reduce_kernel<bool, std::int64_t>(op, a, SumReducer<std::int64_t>{}, StoreAs<std::int64_t>{});
    default: unsupported(op);
  }
}

void mean_kernel(const OpIr& op, const KernelArgs& a) {
  if (op.inputs[0].dtype != DType::f32) unsupported(op);
  // sum / count in f32, like torch: an empty extent gives 0 / 0 = nan.
  const auto n = static_cast<double>(reduced_count(op));
  reduce_kernel<float, float>(op, a, SumReducer<float>{}, DivideBy<float>{n});
}

void prod_kernel(const OpIr& op, const KernelArgs& a) {
  switch (op.inputs[0].dtype) {
    case DType::f32: return reduce_kernel<float, float>(op, a, ProdReducer<float>{}, StoreAs<float>{});
    case DType::i64:
      return reduce_kernel<std::int64_t, std::int64_t>(op, a, ProdReducer<std::int64_t>{}, StoreAs<std::int64_t>{});
    case DType::bool_:
      return reduce_kernel<bool, std::int64_t>(op, a, ProdReducer<std::int64_t>{}, StoreAs<std::int64_t>{});
    default: unsupported(op);
  }
}

template <bool kMax>
void extremum_kernel(const OpIr& op, const KernelArgs& a) {
  switch (op.inputs[0].dtype) {
    case DType::f32: return reduce_kernel<float, float>(op, a, ExtremumReducer<float, kMax>{}, StoreAs<float>{});
    case DType::i64:
      return reduce_kernel<std::int64_t, std::int64_t>(op, a, ExtremumReducer<std::int64_t, kMax>{},
                                                       StoreAs<std::int64_t>{});
    case DType::bool_:
      return reduce_kernel<bool, bool>(op, a, ExtremumReducer<std::uint8_t, kMax>{}, StoreAs<std::uint8_t>{});
    default: unsupported(op);
  }
}

template <bool kAny>
void truth_kernel(const OpIr& op, const KernelArgs& a) {
  switch (op.inputs[0].dtype) {
    case DType::f32: return reduce_kernel<float, bool>(op, a, TruthReducer<kAny>{}, StoreAs<std::uint8_t>{});
    case DType::i64: return reduce_kernel<std::int64_t, bool>(op, a, TruthReducer<kAny>{}, StoreAs<std::uint8_t>{});
    case DType::bool_: return reduce_kernel<bool, bool>(op, a, TruthReducer<kAny>{}, StoreAs<std::uint8_t>{});
    default: unsupported(op);
  }
}

// The f32 forms of sum, mean, prod, max and min on prologue p, as `run(reducer, finish)` runs
// them; the kernels above use the same reducers and finishes.
template <class Run>
void plain_f32(const OpIr& op, const Run& run) {
  switch (op.kind) {
    case OpKind::sum: return run(SumReducer<float>{}, StoreAs<float>{});
    case OpKind::mean: return run(SumReducer<float>{}, DivideBy<float>{static_cast<double>(reduced_count(op))});
    case OpKind::prod: return run(ProdReducer<float>{}, StoreAs<float>{});
    case OpKind::max: return run(ExtremumReducer<float, true>{}, StoreAs<float>{});
    case OpKind::min: return run(ExtremumReducer<float, false>{}, StoreAs<float>{});
    default: throw Error(op_name(op.kind), "not a plain reduction (internal error)");
  }
}

}  // namespace

void reduce_from_source(const OpIr& op, const ReduceSource& source, float* y) {
  const bool statistic = op.kind == OpKind::var || op.kind == OpKind::std || op.kind == OpKind::logsumexp;
  if (op.kind == OpKind::softmax || op.kind == OpKind::log_softmax) return softmax_f32(op, &source, nullptr, y);
  const ReduceLayout layout = plan_reduce_layout(op.inputs[0].shape, reduced_dims(op));
  const SourceInput pulled{&source};
  if (!layout.needs_gather) {
    if (statistic) return stats_f32(op, &source, nullptr, y, layout.geometry);
    return plain_f32(
        op, [&](const auto& r, const auto& e) { reduce_canonical(r, pulled, e, nullptr, y, layout.geometry); });
  }
  if (layout.split && !statistic)
    return plain_f32(op, [&](const auto& r, const auto& e) {
      reduce_split(r, pulled, e, nullptr, y, layout.reduced[0].size, layout.kept[0].size, layout.reduced[1].size);
    });
  // Reduced dims that are not adjacent: the values are gathered into rows first anyway.
  std::vector<float> values(static_cast<std::size_t>(op.inputs[0].numel()));
  source.fill(0, values.data(), op.inputs[0].numel());
  std::vector<float> rows(values.size());
  gather_reduced_last(values.data(), rows.data(), layout);
  if (statistic) return stats_f32(op, nullptr, rows.data(), y, layout.geometry);
  plain_f32(op, [&](const auto& r, const auto& e) {
    reduce_canonical(r, PlainInput<float>{}, e, rows.data(), y, layout.geometry);
  });
}

void register_reduce_kernels(KernelTable& t) {
  t.set(OpKind::sum, sum_kernel);
  t.set(OpKind::mean, mean_kernel);
  t.set(OpKind::prod, prod_kernel);
  t.set(OpKind::max, extremum_kernel<true>);
  t.set(OpKind::min, extremum_kernel<false>);
  t.set(OpKind::any, truth_kernel<true>);
  t.set(OpKind::all, truth_kernel<false>);
  register_reduce_stat_kernels(t);
  register_reduce_arg_kernels(t);
  register_reduce_scan_kernels(t);
  register_reduce_softmax_kernels(t);
}

}  // namespace kiln::cpu
