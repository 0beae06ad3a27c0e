// devices/vulkan private: the pieces the reduce family's kernels share. Every reduction runs on
// the canonical view [outer, extent, inner] (out[o, i] folds in[o, r, i] over r), like the CPU's
// reduce_layout; an op is a ReduceSpec (GLSL accumulator, identity, step, merge, finish) that one
// code generator (vk_reduce_driver.cpp) turns into row, column, split and combine kernels.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_device.h"

namespace kiln::vk::reduce {

struct Geometry {
  std::uint32_t outer = 1, extent = 1, inner = 1;
  std::uint64_t outputs() const { return std::uint64_t{outer} * inner; }
  std::uint64_t elements() const { return outputs() * extent; }
};

// The canonical view of a dims reduction's input: the input itself when its reduced dims form
// one run, else a copy gathered into [kept..., reduced...] order (`scratch` holds it).
struct CanonicalInput {
  const Buffer* buffer = nullptr;
  BufferPtr scratch;
  Geometry geometry;
};
CanonicalInput canonical_input(VulkanDevice& dev, const OpIr& op, const Buffer& in);
// The canonical view of a dims reduction whose input is the input itself (no gather), or none.
std::optional<Geometry> ungathered_geometry(const OpIr& op);

// The view of an op along one dim (argmax, cumsum, softmax): [before, dim, after].
Geometry geometry_along_dim(const OpIr& op, int dim);

// Throws unless every index of `t` fits the kernels' 32-bit arithmetic.
void check_size(const OpIr& op, const TensorIr& t);

// A reduction as GLSL pieces. `functions` defines, over the macros XT (input value type), ACC
// and YT (output value type):
//   ACC acc_identity();  ACC acc_step(ACC a, XT x, uint r);  ACC acc_merge(ACC a, ACC b);
//   YT acc_finish(ACC a);                    (dims reductions)
//   YT acc_rewrite(XT x, ACC a);             (along-dim ops whose output has the input's shape)
// r is the element's index along the reduced extent; merge is associative (and commutative up
// to rounding): partials merge in a fixed order that depends only on the shape. kiln_p(j)
// reads params[j].
struct ReduceSpec {
  std::string key;  // names the GLSL pieces; with the dtypes it keys the kernels
  DType in = DType::f32, out = DType::f32;
  std::string acc;              // GLSL type of the accumulator
  std::string acc_decl;         // its struct declaration, if any
  std::uint32_t acc_bytes = 4;  // at least its std430 size
  std::string functions;
  std::string subgroup;  // optional GLSL expression that reduces `ACC v` over the subgroup
  bool rewrite = false;  // along-dim op: writes acc_rewrite(x, a) for every element
  // Optional, for softmax: GLSL of `YT row_rewrite(XT x, float m, float s)`, the element from
  // its row's max m and sum of exp(x - m). Rows that fit a workgroup's registers then take one
  // kernel that holds the row, finds m and s with native subgroup max and add, and writes it:
  // no online rescaling and no accumulator tree (on an H200, softmax over [4096, 1024]: 0.034 ms
  // against 0.043-0.044 ms for the generic rows kernel).
  std::string row_rewrite;
  std::vector<float> params;
};

// An anchored group's prologue and epilogue taken into a reduction's kernels (vk_anchor.cpp
// writes them). `glsl` defines fused_init(), called first, and as each is present:
//   float prologue(uint i)         the input's element i (canonical == row-major), in place of a load
//                                  (and vec4 prologue4(uint i) under vector_prologue);
//   void epilogue(uint k, YT y)    applied to output k's value y, in place of its store (under a
//                                  rewrite spec, k is the element's row-major index).
// Its parameters are `args`, placed after the spec's params (at word 8 + params.size()).
struct ReduceFusion {
  std::string key;  // names the GLSL (the expression's structure key)
  std::function<std::string()> glsl;
  bool prologue = false, epilogue = false;
  bool store_result = true;  // the reduction's own value is written too (y)
  // The glsl also defines `vec4 prologue4(uint i)`, elements i..i+3 from vector loads (i a
  // multiple of 4), which the kernels that move four elements a thread call in place of four
  // prologue(i) calls; `half`: some buffer of the group holds 16-bit floats.
  bool vector_prologue = false, half = false;
  LaunchArgs args;
};

// Runs `spec` over x viewed as g, writing y ([outer, inner] results, or x's shape when
// spec.rewrite). Chooses the kernels from the shape alone, so results never depend on timing.
// x is null under a fused prologue, y when a fused epilogue does not store the value itself.
void run_reduction(VulkanDevice& dev, const char* name, const ReduceSpec& spec, const Buffer* x, const Buffer* y,
                   const Geometry& g, const ReduceFusion* fusion = nullptr);

// How many input elements reach each output of a dims reduction (the product of the reduced dims).
std::int64_t reduced_count(const OpIr& op);

// The spec of a plain reduction (sum, mean, prod, max, min, any, all) for op's dtypes.
ReduceSpec plain_spec(const OpIr& op);

// The running (max, sum of exp(x - max)) of logsumexp and softmax, without finish or rewrite.
ReduceSpec logsumexp_spec(DType in);
// The specs of var, std and logsumexp (vk_reduce_stats.cpp), and of softmax and log_softmax
// (vk_reduce_softmax.cpp: a rewrite spec over geometry_along_dim).
ReduceSpec stat_spec(const OpIr& op);
ReduceSpec softmax_spec(const OpIr& op);

// The device address of b, or 0 for an empty buffer (which has no memory behind it).
inline std::uint64_t address_or_null(const Buffer& b) { return b.bytes() ? VulkanDevice::address(b) : 0; }
inline std::uint64_t address_or_null(const Buffer* b) { return b ? address_or_null(*b) : 0; }

// GLSL helpers: `e`, a value of dtype t, as float; and as a truth value.
std::string as_float(DType t, const std::string& e);
std::string truth(DType t, const std::string& e);

void register_plain_kernels(KernelTable& t);    // sum mean prod max min any all
void register_stat_kernels(KernelTable& t);     // var std logsumexp
void register_arg_kernels(KernelTable& t);      // argmax argmin
void register_softmax_kernels(KernelTable& t);  // softmax log_softmax
void register_scan_kernels(KernelTable& t);     // cumsum

}  // namespace kiln::vk::reduce
