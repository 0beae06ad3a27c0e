// Vulkan kernels of argmax/argmin: the accumulator is a candidate (value, index). A NaN is
// better than every number; between equal values (NaN included) the smaller index wins, so the
// merge tree finds the first best element whatever order its partials meet in, like torch.
#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::reduce {

namespace {

template <bool kMax>
void arg_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const DType t = op.inputs[0].dtype;
  KILN_CHECK(is_floating(t) || t == DType::i64, op_name(op.kind),
             "input " + describe(op.inputs[0]) + ": dtype not supported");
  ReduceSpec s;
  s.key = kMax ? "argmax" : "argmin";
  s.in = t;
  s.out = DType::i64;
  s.acc = "Candidate";
  s.acc_decl = std::string("struct Candidate { ") + glsl_value_type(t) + " v; uint i; };\n";
  s.acc_bytes = 16;
  const std::string cmp = kMax ? " > " : " < ";
  s.functions = "bool better(XT x, XT y) { return x" + cmp + "y" +
                (is_floating(t) ? " || (kiln_isnan(x) && !kiln_isnan(y))" : "") + "; }\n" + R"(
const uint kNone = 0xffffffffu;  // the identity: no element yet
ACC acc_identity() { Candidate c; c.i = kNone; return c; }
ACC acc_merge(ACC a, ACC b) {
  if (a.i == kNone) return b;
  if (b.i == kNone) return a;
  if (better(b.v, a.v)) return b;
  if (better(a.v, b.v)) return a;
  return b.i < a.i ? b : a;
}
ACC acc_step(ACC a, XT x, uint r) { return (a.i == kNone || better(x, a.v)) ? Candidate(x, r) : a; }
YT acc_finish(ACC a) { return int64_t(a.i); }
)";
  if (op.outputs[0].numel() == 0) return;
  Geometry g;
  if (!op.attrs.flag || op.inputs[0].shape.rank() == 0) {
    check_size(op, op.inputs[0]);
    g = {1, static_cast<std::uint32_t>(op.inputs[0].numel()), 1};
  } else {
    g = geometry_along_dim(op, static_cast<int>(op.attrs.dim));
  }
  run_reduction(dev, op_name(op.kind), s, args.inputs[0], args.outputs[0], g);
}

}  // namespace

void register_arg_kernels(KernelTable& t) {
  t.set(OpKind::argmax, arg_kernel<true>);
  t.set(OpKind::argmin, arg_kernel<false>);
}

}  // namespace kiln::vk::reduce
