// Vulkan kernels of softmax and log_softmax along one dim: the running (max, sum of exp) of
// logsumexp (vk_reduce_stats.cpp) per row, then every element from it. Rows of the last dim
// take one workgroup each (one pass to fold, one to write, while the row is in cache); other
// dims take one thread per column; a long row or column with little else to do is split
// across workgroups (fold, combine, then a separate write pass), all in the shared driver.
// The output may be the input's buffer: an element is read before it is written, by the same
// thread, and every fold precedes every write.
#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::reduce {

namespace {

void softmax_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  run_reduction(dev, op_name(op.kind), softmax_spec(op), args.inputs[0], args.outputs[0],
                geometry_along_dim(op, static_cast<int>(op.attrs.dim)));
}

}  // namespace

ReduceSpec softmax_spec(const OpIr& op) {
  KILN_CHECK(is_floating(op.inputs[0].dtype), op_name(op.kind), "input " + describe(op.inputs[0]) + " must be a float");
  const bool log = op.kind == OpKind::log_softmax;
  ReduceSpec s = logsumexp_spec(op.inputs[0].dtype);  // f32, f16 or bf16: the output's dtype too
  s.key = log ? "log_softmax" : "softmax";
  s.rewrite = true;
  // An infinite max makes torch's sum exp(x - max) NaN (inf - inf), and so every result.
  s.functions += "float lse_sum(ACC a) { return a.m == kiln_inf() ? kiln_nan() : a.s; }\n";
  s.functions += log ? "YT acc_rewrite(XT x, ACC a) { return (x - a.m) - kiln_log(lse_sum(a)); }\n"
                     : "YT acc_rewrite(XT x, ACC a) { return kiln_exp(x - a.m) * (1.0 / lse_sum(a)); }\n";
  s.row_rewrite = log ? "YT row_rewrite(XT x, float m, float s) { return (x - m) - kiln_log(s); }\n"
                      : "YT row_rewrite(XT x, float m, float s) { return kiln_exp(x - m) * (1.0 / s); }\n";
  return s;
}

void register_softmax_kernels(KernelTable& t) {
  t.set(OpKind::softmax, softmax_kernel);
  t.set(OpKind::log_softmax, softmax_kernel);
}

}  // namespace kiln::vk::reduce
