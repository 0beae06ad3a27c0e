// How a reduction's input maps onto [outer, extent, inner] on Vulkan. The planning is the CPU's
// (devices/cpu/reduce_layout.cpp), reimplemented here because that file belongs to the CPU
// device: dims of size 1 drop out, adjacent dims of the same kind (kept or reduced) merge, and
// when the reduced dims still form one run the input already is the canonical view. Otherwise
// (dims {0, 2} of [A, B, C]) one gather kernel copies it into [kept..., reduced...] order, which
// costs one extra pass over the input but keeps the reduction kernels free of runtime-rank
// index arithmetic.
#include <cstdint>

#include "kiln/devices/shape_plans.h"
#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/registry.h"

namespace kiln::vk::reduce {

namespace {

struct Run {
  std::int64_t size, stride;
};

struct Plan {
  Geometry geometry;
  bool needs_gather = false;
  std::vector<Run> kept, reduced;  // outermost first; only filled when needs_gather
};

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

Plan plan_layout(const Shape& shape, const std::vector<std::int64_t>& dims) {
  const std::vector<ReduceRun> segs = reduce_runs(shape, dims);
  Plan p;
  int reduced_runs = 0;
  for (const ReduceRun& s : segs) reduced_runs += s.reduced;
  std::int64_t outer = 1, extent = 1, inner = 1;
  if (reduced_runs == 0) {
    inner = shape.numel();  // nothing folds: every output is one element
  } else if (reduced_runs == 1) {
    bool after = false;
    for (const ReduceRun& s : segs) {
      if (s.reduced)
        extent = s.size, after = true;
      else if (after)
        inner *= s.size;
      else
        outer *= s.size;
    }
  } else {
    p.needs_gather = true;
    for (const ReduceRun& s : segs) {
      if (s.reduced)
        extent *= s.size, p.reduced.push_back({s.size, s.stride});
      else
        outer *= s.size, p.kept.push_back({s.size, s.stride});
    }
  }
  p.geometry = {u32(outer), u32(extent), u32(inner)};
  return p;
}

// y[t] = x[offset of t], t decomposed over the runs (innermost last) of `p`.
void gather(VulkanDevice& dev, const OpIr& op, const Buffer& x, const Buffer& y, const Plan& p) {
  const DType t = op.inputs[0].dtype;
  const std::uint64_t n = p.geometry.elements();
  LaunchArgs a;
  a.buffer(x).buffer(y).u64(n);
  std::vector<Run> runs = p.kept;
  runs.insert(runs.end(), p.reduced.begin(), p.reduced.end());
  a.u32(static_cast<std::uint32_t>(runs.size()));
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) a.u32(u32(it->size)).u32(u32(it->stride));
  const std::string ptr = glsl_pointer_type(t);
  dev.launch(
      std::string("reduce/gather/") + dtype_name(t), "reduce_gather",
      [&] {
        return dev.prelude() + "layout(local_size_x = 256) in;\nvoid main() {\n  " + ptr + " x = " + ptr +
               "(arg_u64(0));\n  " + ptr + " y = " + ptr + R"((arg_u64(1));
  uint n = arg_u32(2), runs = arg_u32(3);
  KILN_FOR_EACH(t, n) {
    uint rest = t, off = 0u;
    for (uint j = 0u; j < runs; ++j) {
      uint size = arg_u32(4u + 2u * j), stride = arg_u32(5u + 2u * j);
      uint q = rest / size;
      off += (rest - q * size) * stride;
      rest = q;
    }
    y.v[t] = x.v[off];
  }
})";
      },
      a, groups_for(n));
}

}  // namespace

void check_size(const OpIr& op, const TensorIr& t) {
  KILN_CHECK(t.numel() < static_cast<std::int64_t>(UINT32_MAX), op_name(op.kind),
             "tensor " + describe(t) + " has 2^32 elements or more, which Vulkan reductions do not support yet");
}

CanonicalInput canonical_input(VulkanDevice& dev, const OpIr& op, const Buffer& in) {
  check_size(op, op.inputs[0]);
  const Plan p = plan_layout(op.inputs[0].shape, op.attrs.ints);
  CanonicalInput c;
  c.geometry = p.geometry;
  c.buffer = &in;
  if (p.needs_gather && p.geometry.elements() > 0) {
    c.scratch = dev.memory().allocate(static_cast<std::size_t>(p.geometry.elements()) * dtype_size(op.inputs[0].dtype));
    gather(dev, op, in, *c.scratch, p);
    c.buffer = c.scratch.get();
  }
  return c;
}

std::optional<Geometry> ungathered_geometry(const OpIr& op) {
  check_size(op, op.inputs[0]);
  const Plan p = plan_layout(op.inputs[0].shape, op.attrs.ints);
  if (p.needs_gather) return std::nullopt;
  return p.geometry;
}

Geometry geometry_along_dim(const OpIr& op, int dim) {
  check_size(op, op.inputs[0]);
  const Shape& s = op.inputs[0].shape;
  if (s.rank() == 0) return {};
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < dim; ++i) outer *= s[i];
  for (int i = dim + 1; i < s.rank(); ++i) inner *= s[i];
  return {u32(outer), u32(s[dim]), u32(inner)};
}

}  // namespace kiln::vk::reduce
