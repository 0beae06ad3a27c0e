// Creation ops on Vulkan. Random values use the CPU device's counter-based scheme: element i of
// a draw hashes (seed, i, lane) with SplitMix64 in 64-bit integer math, so a draw depends only
// on its seed. The GPU keeps the top 24 bits of the hash as an f32 in [0, 1) where the CPU keeps
// 53 as a double, so values agree in distribution and seed-determinism, not bit for bit.
#include <cmath>

#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/ops/attrs_creation.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace {

// One kernel per (op, output dtype): `value` is a GLSL expression of the element index `i`
// (uint) and the parameters p0..p3 (read as `ptype`), in dtype `vtype`, converted on store.
void fill(VulkanDevice& dev, const OpIr& op, const KernelArgs& args, const char* ptype, const char* value,
          DType vtype, const LaunchArgs& params_in) {
  const TensorIr& out = op.outputs[0];
  const std::int64_t n = out.numel();
  if (n == 0) return;
  KILN_CHECK(n <= static_cast<std::int64_t>(UINT32_MAX), op_name(op.kind), "tensors over 2^32 elements are not supported on Vulkan yet");
  LaunchArgs a;
  a.buffer(*args.outputs[0]).u64(static_cast<std::uint64_t>(n));
  for (std::uint64_t w : params_in.words()) a.u64(w);
  const std::string key = std::string("creation/") + op_name(op.kind) + "/" + dtype_name(out.dtype);
  dev.launch(key, op_name(op.kind), [&] {
    std::string s = dev.prelude();
    s += R"(
uint64_t kiln_splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ul;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ul;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBul;
  return x ^ (x >> 31);
}
// Uniform in [0, 1) from the top 24 bits of the element's hash.
float kiln_unit(uint64_t seed, uint i, uint lane) {
  uint64_t h = kiln_splitmix64(seed ^ kiln_splitmix64(uint64_t(i) * 2ul + uint64_t(lane)));
  return float(uint(h >> 40)) * 5.9604644775390625e-8;
}
layout(local_size_x = 256) in;
void main() {
)";
    s += std::string("  ") + glsl_pointer_type(out.dtype) + " out0 = " + glsl_pointer_type(out.dtype) + "(arg_u64(0));\n";
    s += "  uint n = arg_u32(1);\n";
    for (int p = 0; p < 4; ++p)
      s += std::string("  ") + ptype + " p" + std::to_string(p) + " = " +
           (std::string(ptype) == "float" ? "arg_f32(" : "arg_i64(") + std::to_string(2 + p) + ");\n";
    s += "  uint64_t seed = arg_u64(6);\n";
    s += "  KILN_FOR_EACH(i, n) {\n";
    s += std::string("    ") + glsl_value_type(vtype) + " value = " + value + ";\n";
    std::string stored = "value";
    if (vtype == DType::f32 && out.dtype == DType::i64) stored = "kiln_f32_to_i64(value)";
    else if (vtype == DType::f32 && out.dtype == DType::bool_) stored = "!(value == 0.0)";
    else if (vtype == DType::i64 && out.dtype == DType::f32) stored = "float(value)";
    else if (vtype == DType::i64 && out.dtype == DType::bool_) stored = "(value != 0l)";
    s += "    " + glsl_store(out.dtype, "out0", "i", stored) + "\n  }\n}\n";
    return s;
  }, a, groups_for(static_cast<std::uint64_t>(n)));
}

// Four float parameters and a seed.
LaunchArgs fparams(float p0, float p1 = 0, float p2 = 0, float p3 = 0, std::uint64_t seed = 0) {
  LaunchArgs a;
  a.f32(p0).f32(p1).f32(p2).f32(p3).u64(seed);
  return a;
}

void full_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const DType t = op.outputs[0].dtype;
  const double v = FullAttrs::decode(op.kind, op.attrs).value;
  if (t == DType::i64) {
    LaunchArgs p;
    p.i64(static_cast<std::int64_t>(v)).i64(0).i64(0).i64(0).u64(0);
    return fill(dev, op, args, "int64_t", "p0", DType::i64, p);
  }
  fill(dev, op, args, "float", "p0", DType::f32, fparams(static_cast<float>(v)));
}

void arange_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const ArangeAttrs r = ArangeAttrs::decode(op.kind, op.attrs);
  const double start = r.start, step = r.step;
  if (op.outputs[0].dtype == DType::i64 && std::trunc(start) == start && std::trunc(step) == step) {
    LaunchArgs p;
    p.i64(static_cast<std::int64_t>(start)).i64(static_cast<std::int64_t>(step)).i64(0).i64(0).u64(0);
    return fill(dev, op, args, "int64_t", "p0 + int64_t(i) * p1", DType::i64, p);
  }
  fill(dev, op, args, "float", "p0 + float(i) * p1", DType::f32, fparams(static_cast<float>(start), static_cast<float>(step)));
}

void linspace_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  // torch's formula: fill from both ends so that the last element is exactly `end`.
  const std::int64_t steps = op.outputs[0].numel();
  const LinspaceAttrs r = LinspaceAttrs::decode(op.kind, op.attrs);
  const float fs = static_cast<float>(r.start), fe = static_cast<float>(r.end);
  const float step = steps > 1 ? (fe - fs) / static_cast<float>(steps - 1) : 0.0f;
  fill(dev, op, args, "float", "i < uint(p3) ? p0 + p2 * float(i) : p1 - p2 * float(n - i - 1u)", DType::f32,
       fparams(fs, fe, step, static_cast<float>(steps / 2)));
}

void eye_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  LaunchArgs p;
  p.i64(op.outputs[0].shape[1]).i64(0).i64(0).i64(0).u64(0);
  fill(dev, op, args, "int64_t", "(int64_t(i) / p0 == int64_t(i) % p0) ? 1l : 0l", DType::i64, p);
}

void uniform_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  // Rounding can land on `high`: keep the interval half-open.
  const UniformAttrs u = UniformAttrs::decode(op.kind, op.attrs);
  fill(dev, op, args, "float", "min(p0 + (p1 - p0) * kiln_unit(seed, i, 0u), p2)", DType::f32,
       fparams(static_cast<float>(u.low), static_cast<float>(u.high),
               u.high > u.low ? std::nextafter(static_cast<float>(u.high), -INFINITY) : static_cast<float>(u.high), 0,
               u.seed));
}

void normal_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  // Box-Muller on two independent uniforms of the same element.
  const NormalAttrs r = NormalAttrs::decode(op.kind, op.attrs);
  fill(dev, op, args, "float",
       "p0 + p1 * sqrt(-2.0 * log(1.0 - kiln_unit(seed, i, 0u))) * cos(6.283185307179586 * kiln_unit(seed, i, 1u))",
       DType::f32, fparams(static_cast<float>(r.mean), static_cast<float>(r.std), 0, 0, r.seed));
}

void bernoulli_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const BernoulliAttrs r = BernoulliAttrs::decode(op.kind, op.attrs);
  fill(dev, op, args, "float", "kiln_unit(seed, i, 0u) < p0 ? 1.0 : 0.0", DType::f32,
       fparams(static_cast<float>(r.p), 0, 0, 0, r.seed));
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  // The table every device shares (devices/kernel_tables.def).
#define KILN_CREATION_KERNEL(op, kernel) t.set(OpKind::op, kernel);
#include "kiln/devices/kernel_tables.def"
}

}  // namespace kiln::vk
