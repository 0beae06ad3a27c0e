// devices/vulkan private: GLSL of FusedExpr nodes, shared by the fused elementwise kernels
// (vk_elementwise.cpp) and by the reduction and matmul kernels that take an anchored group's
// prologue or epilogue in (vk_anchor.cpp).
//
// An expression's parameters sit in the argument block from a base word on, in this order:
// output addresses, input addresses, n, then (when some input broadcasts) the dims of the shape
// and each broadcasting input's strides, then the scalars of the nodes (push_args writes them).
// A kernel that evaluates an expression in place of a load or before a store passes address 0
// for what it does not read from memory (a prologue's output, an epilogue's input 0).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "kiln/devices/vulkan/vk_kernels.h"
#include "kiln/ops/fused_expr.h"

namespace kiln::vk::fused {

// Whether `in` broadcasts to `shape` (its element index then needs coordinates and strides).
bool broadcasts(const TensorIr& in, const Shape& shape);

// The GLSL names of one expression's parameters; the prefix keeps two expressions of one kernel
// (a reduction's prologue and epilogue) apart.
struct Params {
  struct Var {
    std::string type, name, init;
  };
  std::vector<Var> vars;            // in argument-block order
  std::vector<std::string> scalar;  // per node operand (node * 3 + operand); empty unless scalar
  std::vector<std::string> lo, hi;  // per node: clamp bounds
  std::vector<bool> strided;        // per input: broadcasts
  bool coords = false;              // some input broadcasts
  std::string prefix;
  std::vector<std::string> out_word, in_word;  // the words of the addresses (GLSL uint)
  std::string name(const char* what, std::size_t i) const;  // prefix + what + i
};
// `base`: the first word, as a GLSL uint expression ("" for word 0).
Params params_of(const FusedExpr& e, const std::string& prefix, const std::string& base);

// `uint k<d> = ...` coordinates of element `i` (only when p.coords).
std::string coords_code(const FusedExpr& e, const Params& p, const std::string& indent);
// Loads x<k> of inputs k >= first at element i.
std::string load_code(const FusedExpr& e, const Params& p, std::size_t first, const std::string& indent);
// The nodes of one element: inputs are x<k><sfx>, nodes v<i><sfx>.
std::string node_code(const FusedExpr& e, const Params& p, const std::string& sfx, const std::string& indent);
// Stores of the outputs at element i.
std::string store_code(const FusedExpr& e, const Params& p, const std::string& indent);

// The expression as functions a kernel calls per element (flat index into e.shape), with its
// parameters in globals that <prefix>init() loads once:
//   epilogue == false: `float <prefix>value(uint i)`, the single output's value (a prologue);
//   epilogue == true:  `void <prefix>apply(uint i, float x0)`, input 0 given (rounded there to
//                      its dtype when that is 16 bits), outputs stored.
std::string functions(const FusedExpr& e, const std::string& prefix, const std::string& base, bool epilogue);

// Four consecutive elements at once (a reduction's prologue under vector loads): whether `e` can
// compute them from vector loads (its shape's last dim is a multiple of 4, every input is a
// float, and each input either runs along that dim or is broadcast across it); the caller also
// checks that the inputs' buffers are aligned to four elements (vector4_bytes). Then
// value4_function, placed after functions(e, prefix, base, false), defines
// `vec4 <prefix>value4(uint i)`: elements i..i+3 of the single output, i a multiple of 4, each
// computed as <prefix>value would (coordinates once for the four).
bool vector_value_ok(const FusedExpr& e);
std::string value4_function(const FusedExpr& e, const std::string& prefix, const std::string& base);

// The argument words of an expression's parameters (null buffers and empty ones as address 0).
void push_args(LaunchArgs& a, const FusedExpr& e, std::span<Buffer* const> outputs, std::span<Buffer* const> inputs);

}  // namespace kiln::vk::fused
