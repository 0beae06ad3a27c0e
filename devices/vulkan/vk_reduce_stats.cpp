// Vulkan kernels of the statistics, each in one pass over the input with a mergeable
// accumulator (so the driver's split and combine paths apply unchanged):
//   var/std    Welford's (count, mean, M2), merged with Chan's formula, in f32 like torch's CUDA
//              kernels (the CPU device accumulates two passes in f64; the results agree to
//              ~1e-6 relative on well-conditioned data).
//   logsumexp  the running (max m, sum of exp(x - m)), rescaled when m grows (the "online" form
//              of the CPU's max-then-sum); an infinite or NaN max is the answer itself, like torch.
#include <algorithm>

#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::reduce {

namespace {

constexpr const char* kWelford = R"(
ACC acc_identity() { return Welford(0u, 0.0, 0.0); }
ACC acc_step(ACC a, XT x, uint r) {
  a.n += 1u;
  float d = x - a.mean;
  a.mean += d / float(a.n);
  a.m2 += d * (x - a.mean);
  return a;
}
ACC acc_merge(ACC a, ACC b) {
  if (a.n == 0u) return b;
  if (b.n == 0u) return a;
  uint n = a.n + b.n;
  float d = b.mean - a.mean, fb = float(b.n) / float(n);
  return Welford(n, a.mean + d * fb, a.m2 + b.m2 + d * d * float(a.n) * fb);
}
// kiln_p(0): the divisor max(0, count - correction); kiln_p(1): 1 for std.
YT acc_finish(ACC a) {
  float div = kiln_p(0u), v;
  if (div == 0.0) v = (a.m2 == 0.0 || kiln_isnan(a.m2)) ? kiln_nan() : kiln_inf();
  else v = a.m2 / div;
  return kiln_p(1u) != 0.0 ? kiln_sqrt(v) : v;
}
)";

void stat_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const CanonicalInput c = canonical_input(dev, op, *args.inputs[0]);
  run_reduction(dev, op_name(op.kind), stat_spec(op), c.buffer, args.outputs[0], c.geometry);
}

}  // namespace

ReduceSpec logsumexp_spec(DType in) {
  ReduceSpec s;
  s.key = "logsumexp";
  s.in = in;
  s.out = is_half(in) ? in : DType::f32;  // integers give f32
  s.acc = "Lse";
  s.acc_decl = "struct Lse { float m; float s; };\n";
  s.acc_bytes = 8;
  // -inf elements add nothing (and would give exp(-inf + inf) = NaN); a NaN poisons m for good.
  s.functions = R"(
ACC acc_identity() { return Lse(-kiln_inf(), 0.0); }
ACC acc_merge(ACC a, ACC b) {
  if (kiln_isnan(a.m) || kiln_isnan(b.m)) return Lse(kiln_nan(), kiln_nan());
  if (a.m == -kiln_inf()) return b;
  if (b.m == -kiln_inf()) return a;
  float m = max(a.m, b.m);
  if (kiln_isinf(m)) return Lse(m, 0.0);  // +inf: the answer whatever the sum
  return Lse(m, a.s * kiln_exp(a.m - m) + b.s * kiln_exp(b.m - m));
}
ACC acc_step(ACC a, XT x_in, uint r) {
  float x = )" + as_float(in, "x_in") +
                R"(;
  if (kiln_isnan(x)) return Lse(x, x);
  if (x == -kiln_inf() || kiln_isnan(a.m)) return a;
  if (x > a.m) return Lse(x, kiln_isinf(x) ? 0.0 : a.s * kiln_exp(a.m - x) + 1.0);
  return Lse(a.m, kiln_isinf(a.m) ? 0.0 : a.s + kiln_exp(x - a.m));
}
)";
  return s;
}

ReduceSpec stat_spec(const OpIr& op) {
  if (op.kind == OpKind::logsumexp) {
    ReduceSpec s = logsumexp_spec(op.inputs[0].dtype);
    s.functions +=
        "YT acc_finish(ACC a) { return (kiln_isinf(a.m) || kiln_isnan(a.m)) ? a.m : kiln_log(a.s) + a.m; }\n";
    return s;
  }
  KILN_CHECK(is_floating(op.inputs[0].dtype), op_name(op.kind), "input " + describe(op.inputs[0]) + " must be a float");
  const std::int64_t count = reduced_count(op);
  ReduceSpec s;
  s.key = "welford";
  s.in = s.out = op.inputs[0].dtype;  // f32, f16 or bf16, accumulated in f32
  s.acc = "Welford";
  s.acc_decl = "struct Welford { uint n; float mean; float m2; };\n";
  s.acc_bytes = 12;
  s.functions = kWelford;
  // torch: the divisor is clamped at 0, so a correction >= count gives inf (or nan for 0 / 0).
  s.params = {static_cast<float>(std::max(0.0, static_cast<double>(count) - op.attrs.scalar)),
              op.kind == OpKind::std ? 1.0f : 0.0f};
  return s;
}

void register_stat_kernels(KernelTable& t) {
  for (OpKind k : {OpKind::var, OpKind::std, OpKind::logsumexp}) t.set(k, stat_kernel);
}

}  // namespace kiln::vk::reduce
