// Vulkan kernels of the plain reductions (sum, mean, prod, max, min, any, all): one ReduceSpec
// each on the shared driver (vk_reduce_driver.cpp), with the CPU device's dtype rules: sum and
// prod of i64 or bool give i64 (wrapping), max/min keep the dtype and a NaN wins, any/all count
// nonzero (and NaN) as true, mean is the f32 sum divided by the count (an empty extent gives
// NaN). Also the family's registration.
#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace reduce {

std::int64_t reduced_count(const OpIr& op) {
  std::int64_t n = 1;
  for (std::int64_t d : op.attrs.ints) n *= op.inputs[0].shape[static_cast<int>(d)];
  return n;
}

namespace {

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

// sum and prod: floats accumulate in f32 and keep their dtype; i64 and bool accumulate in i64.
ReduceSpec additive(const char* key, DType in, bool product) {
  const std::string op = product ? " * " : " + ";
  if (is_floating(in)) {
    ReduceSpec s = simple(key, in, in, "float", product ? "1.0" : "0.0", "x", "a" + op + "v", "a");
    if (!product) s.subgroup = "subgroupAdd(v)";
    return s;
  }
  const std::string value = in == DType::bool_ ? "(x ? 1l : 0l)" : "x";
  return simple(key, in, DType::i64, "int64_t", product ? "1l" : "0l", value, "a" + op + "v", "a");
}

ReduceSpec mean_spec(const OpIr& op) {
  const DType t = op.inputs[0].dtype;  // f32, f16 or bf16: accumulated in f32
  ReduceSpec s = simple("mean", t, t, "float", "0.0", "x", "a + v", "a / kiln_p(0u)");
  s.subgroup = "subgroupAdd(v)";
  s.params = {static_cast<float>(reduced_count(op))};
  return s;
}

ReduceSpec extremum(const OpIr& op, bool is_max) {
  const DType t = op.inputs[0].dtype;
  const char* key = is_max ? "max" : "min";
  const char* cmp = is_max ? " > " : " < ";
  ReduceSpec s;
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      // The first NaN wins and stays (no number compares better than it).
      s = simple(key, t, t, "float", is_max ? "-kiln_inf()" : "kiln_inf()", "x",
                 std::string("(v") + cmp + "a || kiln_isnan(v)) ? v : a", "a");
      break;
    case DType::i64:
      s = simple(key, t, t, "int64_t", is_max ? "KILN_I64_MIN" : "9223372036854775807l", "x",
                 is_max ? "max(a, v)" : "min(a, v)", "a");
      break;
    case DType::bool_:
      s = simple(key, t, t, "uint", is_max ? "0u" : "1u", "(x ? 1u : 0u)", is_max ? "max(a, v)" : "min(a, v)", "a != 0u");
      break;
    default: throw Error(op_name(op.kind), "input " + describe(op.inputs[0]) + ": dtype not supported on Vulkan");
  }
  return s;
}

ReduceSpec truth_spec(const OpIr& op, bool is_any) {
  const DType t = op.inputs[0].dtype;
  std::string value = truth(t, "x");
  value.append(" ? 1u : 0u");
  ReduceSpec s = simple(is_any ? "any" : "all", t, DType::bool_, "uint", is_any ? "0u" : "1u", value,
                        is_any ? "a | v" : "a & v", "a != 0u");
  s.subgroup = is_any ? "subgroupOr(v)" : "subgroupAnd(v)";
  return s;
}

void plain_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const CanonicalInput c = canonical_input(dev, op, *args.inputs[0]);
  run_reduction(dev, op_name(op.kind), plain_spec(op), c.buffer, args.outputs[0], c.geometry);
}

}  // namespace

ReduceSpec plain_spec(const OpIr& op) {
  switch (op.kind) {
    case OpKind::sum: return additive("sum", op.inputs[0].dtype, false);
    case OpKind::prod: return additive("prod", op.inputs[0].dtype, true);
    case OpKind::mean: return mean_spec(op);
    case OpKind::max: return extremum(op, true);
    case OpKind::min: return extremum(op, false);
    case OpKind::any: return truth_spec(op, true);
    case OpKind::all: return truth_spec(op, false);
    default: throw Error(op_name(op.kind), "not a plain reduction");
  }
}

void register_plain_kernels(KernelTable& t) {
  for (OpKind k : {OpKind::sum, OpKind::mean, OpKind::prod, OpKind::max, OpKind::min, OpKind::any, OpKind::all})
    t.set(k, plain_kernel);
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
