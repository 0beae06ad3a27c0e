// Vulkan kernels of the plain reductions (sum, mean, prod, max, min, any, all): one ReduceSpec
// each on the shared driver (vk_reduce_driver.cpp), with the CPU device's dtype rules: sum and
// prod of i64 or bool give i64 (wrapping), max/min keep the dtype and a NaN wins, any/all count
// nonzero (and NaN) as true, mean is the f32 sum divided by the count (an empty extent gives
// NaN). Also the family's registration.
#include "devices/vulkan/vk_reduce.h"
#include "ops/registry.h"

namespace kiln::vk {

namespace reduce {

namespace {

std::int64_t reduced_count(const OpIr& op) {
  std::int64_t n = 1;
  for (std::int64_t d : op.attrs.ints) n *= op.inputs[0].shape[static_cast<int>(d)];
  return n;
}

void run_dims(VulkanDevice& dev, const OpIr& op, const KernelArgs& args, const ReduceSpec& spec) {
  const CanonicalInput c = canonical_input(dev, op, *args.inputs[0]);
  run_reduction(dev, op_name(op.kind), spec, *c.buffer, *args.outputs[0], c.geometry);
}

// A fold whose accumulator is one value of `acc`: step `a = fold(a, v)` on the element's value
// v (the input converted by `value`), merge the same fold on two accumulators.
ReduceSpec simple(const std::string& key, DType in, DType out, const std::string& acc, const std::string& identity,
                  const std::string& value, const std::string& fold, const std::string& finish) {
  ReduceSpec s;
  s.key = key;
  s.in = in;
  s.out = out;
  s.acc = acc;
  s.acc_bytes = acc == "int64_t" ? 8 : 4;
  s.functions = "ACC acc_fold(ACC a, ACC v) { return " + fold +
                "; }\n"
                "ACC acc_identity() { return " +
                identity +
                "; }\n"
                "ACC acc_step(ACC a, XT x, uint r) { return acc_fold(a, " +
                value +
                "); }\n"
                "ACC acc_merge(ACC a, ACC b) { return acc_fold(a, b); }\n"
                "YT acc_finish(ACC a) { return " +
                finish + "; }\n";
  return s;
}

// sum and prod: f32 stays f32; i64 and bool accumulate in i64.
ReduceSpec additive(const char* key, DType in, bool product) {
  const std::string op = product ? " * " : " + ";
  if (in == DType::f32) {
    ReduceSpec s = simple(key, in, DType::f32, "float", product ? "1.0" : "0.0", "x", "a" + op + "v", "a");
    if (!product) s.subgroup = "subgroupAdd(v)";
    return s;
  }
  const std::string value = in == DType::bool_ ? "(x ? 1l : 0l)" : "x";
  return simple(key, in, DType::i64, "int64_t", product ? "1l" : "0l", value, "a" + op + "v", "a");
}

void sum_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  run_dims(dev, op, args, additive("sum", op.inputs[0].dtype, false));
}

void prod_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  run_dims(dev, op, args, additive("prod", op.inputs[0].dtype, true));
}

void mean_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  ReduceSpec s = simple("mean", DType::f32, DType::f32, "float", "0.0", "x", "a + v", "a / kiln_p(0u)");
  s.subgroup = "subgroupAdd(v)";
  s.params = {static_cast<float>(reduced_count(op))};
  run_dims(dev, op, args, s);
}

template <bool kMax>
void extremum_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const DType t = op.inputs[0].dtype;
  const char* key = kMax ? "max" : "min";
  const char* cmp = kMax ? " > " : " < ";
  ReduceSpec s;
  switch (t) {
    case DType::f32:
      // The first NaN wins and stays (no number compares better than it).
      s = simple(key, t, t, "float", kMax ? "-kiln_inf()" : "kiln_inf()", "x",
                 std::string("(v") + cmp + "a || kiln_isnan(v)) ? v : a", "a");
      break;
    case DType::i64:
      s = simple(key, t, t, "int64_t", kMax ? "KILN_I64_MIN" : "9223372036854775807l", "x",
                 kMax ? "max(a, v)" : "min(a, v)", "a");
      break;
    case DType::bool_:
      s = simple(key, t, t, "uint", kMax ? "0u" : "1u", "(x ? 1u : 0u)", kMax ? "max(a, v)" : "min(a, v)", "a != 0u");
      break;
    default: throw Error(op_name(op.kind), "input " + describe(op.inputs[0]) + ": dtype not supported on Vulkan");
  }
  run_dims(dev, op, args, s);
}

template <bool kAny>
void truth_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const DType t = op.inputs[0].dtype;
  std::string value = truth(t, "x");
  value.append(" ? 1u : 0u");
  ReduceSpec s = simple(kAny ? "any" : "all", t, DType::bool_, "uint", kAny ? "0u" : "1u", value,
                        kAny ? "a | v" : "a & v", "a != 0u");
  s.subgroup = kAny ? "subgroupOr(v)" : "subgroupAnd(v)";
  run_dims(dev, op, args, s);
}

}  // namespace

void register_plain_kernels(KernelTable& t) {
  t.set(OpKind::sum, sum_kernel);
  t.set(OpKind::mean, mean_kernel);
  t.set(OpKind::prod, prod_kernel);
  t.set(OpKind::max, extremum_kernel<true>);
  t.set(OpKind::min, extremum_kernel<false>);
  t.set(OpKind::any, truth_kernel<true>);
  t.set(OpKind::all, truth_kernel<false>);
}

}  // namespace reduce

void register_reduce_kernels(KernelTable& t) {
  reduce::register_plain_kernels(t);
  reduce::register_stat_kernels(t);
  reduce::register_arg_kernels(t);
  reduce::register_softmax_kernels(t);
  reduce::register_scan_kernels(t);
}

}  // namespace kiln::vk
