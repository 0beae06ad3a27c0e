// The Vulkan kernel API: how a kernel of the Vulkan device is written and run.
//
// A kernel is GLSL compute code generated at run time. It sees no descriptor sets: every tensor
// is a 64-bit device address (VK_KHR_buffer_device_address, GL_EXT_buffer_reference) passed in
// its argument block, together with the kernel's integer and float parameters. The block's
// first kPushWords words travel in push constants, so most kernels read no memory for them; the
// rest, if any, lie in per-submission host-visible memory whose address (and the device's
// error flag) are push constants too. Every kernel source starts with kernel_prelude(), which
// declares the typed pointer types and the accessors for the argument block:
//
//   arg_u64(i) arg_i64(i) arg_u32(i) arg_f32(i)   word i of the argument block
//   F32s, I64s, I32s, U32s, U8s (bool), U16s      pointers: F32s p = F32s(arg_u64(0)); p.v[k]
//     (U16s holds f16/bf16 bits: kiln_f16_to_f32, kiln_f32_to_f16, kiln_bf16_to_f32, ...)
//   kiln_raise(code)                             report a device-side error (first code wins)
//   KILN_FOR_EACH(i, n)                          grid-stride loop over [0, n)
//   kiln_isnan, kiln_isinf, kiln_nan(), kiln_erf, ... (math with PyTorch semantics, see
//   vk_math.cpp)
//
// Host side: fill a LaunchArgs in the order the kernel reads it, and call launch() with a
// cache key that identifies the source (the generator runs only when the key is not compiled
// yet; the SPIR-V is also cached on disk). Launches are recorded, batched and ordered by the
// device: a kernel always sees the results of every command recorded before it.
//
// Example (a kernel that fills an f32 tensor with `value`):
//
//   void fill(VulkanDevice& dev, const Buffer& out, std::uint32_t n, float value) {
//     LaunchArgs a;
//     a.buffer(out).u32(n).f32(value);
//     dev.launch("example/fill_f32", "fill", [] {
//       return kernel_prelude() + R"(
//         layout(local_size_x = 256) in;
//         void main() {
//           F32s out0 = F32s(arg_u64(0)); uint n = arg_u32(1); float v = arg_f32(2);
//           KILN_FOR_EACH(i, n) out0.v[i] = v;
//         })";
//     }, a, groups_for(n));
//   }
//
// A kernel for an op is a function of (VulkanDevice&, const OpIr&, const KernelArgs&)
// registered in the KernelTable by OpKind (register_<family>_kernels, like the CPU device).
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kiln/devices/device.h"

namespace kiln::vk {

class VulkanDevice;

// The words of a kernel's argument block, in the order the kernel reads them (8 bytes each).
class LaunchArgs {
 public:
  LaunchArgs() { words_.reserve(32); }
  LaunchArgs& buffer(const Buffer& b);  // the device address of a tensor's buffer
  LaunchArgs& address(std::uint64_t device_address) { return push(device_address); }
  LaunchArgs& u32(std::uint32_t v) { return push(v); }
  LaunchArgs& u64(std::uint64_t v) { return push(v); }
  LaunchArgs& i64(std::int64_t v) { return push(static_cast<std::uint64_t>(v)); }
  LaunchArgs& f32(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return push(bits);
  }
  // A scalar in the GLSL type of `dtype`: f32 bits, i64, or 0/1 for bool.
  LaunchArgs& scalar(double v, DType dtype);
  const std::vector<std::uint64_t>& words() const { return words_; }
  std::size_t size() const { return words_.size(); }

 private:
  LaunchArgs& push(std::uint64_t w) {
    words_.push_back(w);
    return *this;
  }
  std::vector<std::uint64_t> words_;
};

using Groups = std::array<std::uint32_t, 3>;

// Workgroups for a KILN_FOR_EACH loop over n items with local_size_x = `local` (capped: the
// loop strides over the rest).
Groups groups_for(std::uint64_t n, std::uint32_t local = 256);

using SourceFn = std::function<std::string()>;

// The GLSL that opens every kernel: version, extensions, pointer types, argument accessors and
// the math library. Depends on the device's features (f16 types only where supported).
std::string kernel_prelude(const VulkanDevice& dev);

// GLSL names of kiln dtypes: the value type ("float", "int64_t", "bool") and the pointer type
// ("F32s", "I64s", "U8s").
const char* glsl_value_type(DType t);
const char* glsl_pointer_type(DType t);
// A load of element `index` of pointer `ptr` as a value of dtype t, and a store of `value`.
std::string glsl_load(DType t, const std::string& ptr, const std::string& index);
std::string glsl_store(DType t, const std::string& ptr, const std::string& index, const std::string& value);

// Four elements a thread: on NVIDIA that is what reaches memory bandwidth (scalar loads, one per
// thread, stall at about 40% of it). f32 moves as 16-byte vec4s, 16-bit floats as four words in
// an 8-byte uvec2, converted with the prelude's conversions. vector4_bytes(t) is the size, and
// so the alignment, of four elements of t: 0 where t has no vector access.
std::size_t vector4_bytes(DType t);
// Four elements of dtype t at vector index q of the buffer at `address` (a uint64_t
// expression), as a vec4 of f32; and the store of `v`, a vec4 of f32, rounded to t there.
std::string glsl_load4(DType t, const std::string& address, const std::string& q);
std::string glsl_store4(DType t, const std::string& address, const std::string& q, const std::string& v);
// The declarations those need, once per kernel (`half`: some buffer holds 16-bit floats).
std::string glsl_vector_types(bool half);

// Kernels of ops, by kind.
using Kernel = void (*)(VulkanDevice& dev, const OpIr& op, const KernelArgs& args);

class KernelTable {
 public:
  void set(OpKind k, Kernel fn) { table_[static_cast<std::size_t>(k)] = fn; }
  Kernel operator[](OpKind k) const { return table_[static_cast<std::size_t>(k)]; }

 private:
  std::array<Kernel, kOpCount> table_{};
};

void register_creation_kernels(KernelTable& t);
// Elementwise ops run as one-node fused expressions (see vk_elementwise.cpp).
void register_elementwise_kernels(KernelTable& t);
void register_reduce_kernels(KernelTable& t);  // vk_reduce*.cpp
void register_layout_kernels(KernelTable& t);  // vk_layout.cpp
void register_conv_kernels(KernelTable& t);    // vk_conv.cpp
void register_pool_kernels(KernelTable& t);    // vk_pool.cpp
void register_index_kernels(KernelTable& t);   // vk_index.cpp
void register_linalg_kernels(KernelTable& t);

}  // namespace kiln::vk
