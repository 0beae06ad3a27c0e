// The gradients of a convolution on Vulkan, as steps on the device's own kernels (the composite
// of ops/decompositions.h for a device without these ops, kept below the op so that autograd's
// conv rule finds them): per group g of G,
//   conv_input_grad:  with stride 1, a convolution of dy (input_grad_as_conv); else
//                     cols[n, g] = W_g^T [C/G * kk, K/G] @ dy[n, g] [K/G, L], dx = fold(cols),
//                     for 16-bit floats cols and fold's sums in f32, dx rounded once;
//   conv_weight_grad: dW_g [K/G, C/G * kk] = sum over n of dy[n, g] @ cols[n, g]^T,
//                     cols = unfold(x), the per-image products kept in f32 and summed in f32
//                     (16-bit floats round once, at the end, as PyTorch's f32 accumulation does),
// the columns read as a transposed operand where the tiled matmul takes one (f32, and 16-bit
// floats on GPUs without tensor-core kernels), else copied out transposed first. The
// intermediates live in scratch buffers of the device's pool for the op's duration.
#include <algorithm>
#include <string>

#include "kiln/devices/vulkan/vk_conv_gemm.h"
#include "kiln/devices/vulkan/vk_device.h"
#include "kiln/devices/vulkan/vk_layout_copy.h"
#include "kiln/devices/vulkan/vk_matmul.h"
#include "kiln/devices/vulkan/vk_reduce.h"
#include "kiln/ops/attrs_linalg.h"
#include "kiln/ops/attrs_window.h"
#include "kiln/ops/registry.h"

namespace kiln::vk {

namespace {

// What both gradients read of their ConvAttrs (ops/attrs_window.h; ops/conv.cpp checked them
// against the operands), and the unfold (image == nullptr) or fold attrs of the same window.
struct GradGeometry {
  ConvAttrs conv;
  std::int64_t kk = 1, windows = 1;
  OpAttrs window;
};

GradGeometry grad_geometry(const OpIr& op, const Shape& weight, const Shape& dy, const Shape* image) {
  GradGeometry g;
  g.conv = ConvAttrs::decode(op);
  for (int d = 0; d < g.conv.dims; ++d) {
    g.kk *= weight[2 + d];
    g.windows *= dy[2 + d];
  }
  WindowAttrs w = g.conv.window(weight.begin() + 2);
  if (image) std::copy(image->begin() + 2, image->end(), w.output_size.begin());
  g.window = w.encode(image ? OpKind::fold : OpKind::unfold);
  return g;
}

void check_sizes(const char* op, const OpIr& o, std::int64_t columns) {
  for (const TensorIr& t : o.inputs) check_32bit_elements(op, t.numel());
  check_32bit_elements(op, o.outputs[0].numel());
  check_32bit_elements(op, columns);
}

// A copy from src into a new scratch buffer of `elements` (at least one: an empty batch still
// makes a weight gradient, of zeros), its dims for the caller to push.
StridedCopy copy_into(VulkanDevice& dev, const Buffer* src, std::int64_t elements, std::size_t elem, BufferPtr& dst) {
  dst = dev.memory().allocate(static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * elem);
  StridedCopy copy;
  copy.src = src;
  copy.dst = dst.get();
  copy.elem_bytes = elem;
  return copy;
}

// With stride 1, the input gradient is itself a convolution: dy convolved with the weight
// flipped in space and with its channels swapped per group, padded by dilation * (k - 1) - p
// (which must not be negative). It runs on the forward kernel (an implicit GEMM: no columns in
// memory, no fold), in the configuration tuned for its shape class: on an H100 about the GPU
// time of the product and fold it replaces (conv2d_backward 462 against 468 us), without their
// columns buffer (58 MB there). Returns false where it does not apply.
bool input_grad_as_conv(VulkanDevice& dev, const OpIr& op, const KernelArgs& args, const GradGeometry& g) {
  const TensorIr &dy = op.inputs[0], &w = op.inputs[1], &dx = op.outputs[0];
  const ConvAttrs& a = g.conv;
  ConvAttrs flipped = a;
  flipped.sizes = {};
  for (int d = 0; d < a.dims; ++d) {
    if (a.stride[d] != 1) return false;
    flipped.padding[d] = a.dilation[d] * (w.shape[2 + d] - 1) - a.padding[d];
    if (flipped.padding[d] < 0) return false;
  }
  const std::int64_t G = a.groups, mg = w.shape[0] / G, cg = w.shape[1];
  // W' [C, K/G, *kernel]: W'[g * cg + c, m, j] = W[g * mg + m, c, kernel - 1 - j].
  BufferPtr wt;
  StridedCopy copy = copy_into(dev, args.inputs[1], w.numel(), dtype_size(w.dtype), wt);
  copy.push_dim(G, mg * cg * g.kk, 0);
  copy.push_dim(cg, g.kk, 0);
  copy.push_dim(mg, cg * g.kk, 0);
  Shape wt_shape{G * cg, mg};
  std::int64_t spatial_stride = g.kk;
  for (int d = 0; d < a.dims; ++d) {
    const std::int64_t k = w.shape[2 + d];
    spatial_stride /= k;
    copy.src_offset += (k - 1) * spatial_stride;
    copy.push_dim(k, -spatial_stride, 0);
    wt_shape.push_back(k);
  }
  set_contiguous_dst(copy);
  run_strided_copy(dev, "conv_input_grad", copy);
  run_step(dev, OpKind::conv, {{dy, args.inputs[0]}, {step_tensor(wt_shape, w.dtype), wt.get()}}, dx, args.outputs[0],
           flipped.encode(OpKind::conv));
  return true;
}

// dy [N, K, *out], weight [K, C/G, *kernel] -> dx [N, C, *in].
void conv_input_grad_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const TensorIr &dy = op.inputs[0], &w = op.inputs[1], &dx = op.outputs[0];
  if (dx.numel() == 0) return;
  const GradGeometry g = grad_geometry(op, w.shape, dy.shape, &dx.shape);
  const std::int64_t n = dy.shape[0], mg = w.shape[0] / g.conv.groups, depth = w.shape[1] * g.kk, G = g.conv.groups;
  check_sizes("conv_input_grad", op, n * G * depth * g.windows);
  if (input_grad_as_conv(dev, op, args, g)) return;
  const DType t = dx.dtype;
  const std::size_t e = dtype_size(t);
  // W_g^T: [G, K/G, depth] -> [G, depth, K/G].
  BufferPtr wt;
  StridedCopy copy = copy_into(dev, args.inputs[1], w.numel(), e, wt);
  copy.push_dim(G, mg * depth, 0);
  copy.push_dim(depth, 1, 0);
  copy.push_dim(mg, depth, 0);
  set_contiguous_dst(copy);
  run_strided_copy(dev, "conv_input_grad", copy);
  // The columns in f32 whatever t is: fold sums those of overlapping windows, and for 16-bit
  // floats that sum stays in f32 and rounds once (a cast), as PyTorch's f32 accumulation does;
  // columns rounded to 16 bits before their sum were each off by up to half a unit.
  BufferPtr cols = dev.memory().allocate(static_cast<std::size_t>(n * G * depth * g.windows) * sizeof(float));
  run_step(
      dev, OpKind::matmul,
      {{step_tensor(Shape{G, depth, mg}, t), wt.get()}, {step_tensor(Shape{n, G, mg, g.windows}, t), args.inputs[0]}},
      step_tensor(Shape{n, G, depth, g.windows}, DType::f32), cols.get());
  const TensorIr cols_f32 = step_tensor(Shape{n, G * depth, g.windows}, DType::f32);
  if (t == DType::f32) return run_step(dev, OpKind::fold, {{cols_f32, cols.get()}}, dx, args.outputs[0], g.window);
  const TensorIr dx_f32 = step_tensor(dx.shape, DType::f32);
  BufferPtr summed = dev.memory().allocate(static_cast<std::size_t>(dx.numel()) * sizeof(float));
  run_step(dev, OpKind::fold, {{cols_f32, cols.get()}}, dx_f32, summed.get(), g.window);
  OpAttrs to_t;
  to_t.dtype = t;
  run_step(dev, OpKind::cast, {{dx_f32, summed.get()}}, dx, args.outputs[0], std::move(to_t));
}

// dy [N, K, *out], x [N, C, *in] -> dw [K, C/G, *kernel].
void conv_weight_grad_kernel(VulkanDevice& dev, const OpIr& op, const KernelArgs& args) {
  const TensorIr &dy = op.inputs[0], &x = op.inputs[1], &dw = op.outputs[0];
  if (dw.numel() == 0) return;
  const GradGeometry g = grad_geometry(op, dw.shape, dy.shape, nullptr);
  const std::int64_t n = dy.shape[0], G = g.conv.groups, mg = dw.shape[0] / G, depth = dw.shape[1] * g.kk;
  const std::int64_t columns = n * G * depth * g.windows;
  check_sizes("conv_weight_grad", op, columns);
  check_32bit_elements("conv_weight_grad", n * dw.numel());  // the per-image products
  const DType t = dw.dtype;
  const std::size_t e = dtype_size(t);
  if (n == 0) return run_step(dev, OpKind::full, {}, dw, args.outputs[0]);  // no windows: zeros
  BufferPtr cols, cols_t;
  Buffer* image_cols = args.inputs[1];
  // A pointwise convolution's columns are the image itself.
  bool pointwise = g.windows == x.numel() / (x.shape[0] * x.shape[1]) && g.kk == 1;
  for (int d = 0; d < g.conv.dims && pointwise; ++d) pointwise = g.conv.stride[d] == 1 && g.conv.padding[d] == 0;
  if (!pointwise) {
    cols = dev.memory().allocate(static_cast<std::size_t>(std::max<std::int64_t>(columns, 1)) * e);
    run_step(dev, OpKind::unfold, {{x, args.inputs[1]}}, step_tensor(Shape{n, G * depth, g.windows}, t), cols.get(),
             g.window);
    image_cols = cols.get();
  }
  // The products read the columns as B^T where the tiled kernel takes transposed operands (on
  // an H100 this took 100 of conv2d_backward's 470 us off); else cols [N, G, depth, L] are
  // copied out as [N, G, L, depth], per image and group one transposed matrix.
  const bool read_transposed = transposed_matmul_dtypes(dev).has(t);
  if (!read_transposed) {
    StridedCopy c = copy_into(dev, image_cols, columns, e, cols_t);
    c.push_dim(n * G, depth * g.windows, 0);
    c.push_dim(g.windows, 1, 0);
    c.push_dim(depth, g.windows, 0);
    set_contiguous_dst(c);
    run_strided_copy(dev, "conv_weight_grad", c);
  }
  // One product per image (dy's [K/G, L] blocks are row-major as they lie), then their sum:
  // N times the workgroups of one product over N * L, which left most of a GPU idle. The
  // products stay in f32 (every matmul kernel accumulates in f32 and writes C in f32 on request)
  // and their sum rounds once: rounding each image's product to 16 bits first lost most of a
  // result whose products cancel (a bf16 0.5 where f32 gives 0.5446).
  const Shape products{n, G, mg, depth};
  const DType product_dtype = n > 1 ? DType::f32 : t;
  BufferPtr partial;
  Buffer* into = args.outputs[0];
  if (n > 1) {
    partial = dev.memory().allocate(static_cast<std::size_t>(products.numel()) * dtype_size(product_dtype));
    into = partial.get();
  }
  if (read_transposed)
    run_step(dev, OpKind::matmul,
             {{step_tensor(Shape{n, G, mg, g.windows}, t), args.inputs[0]},
              {step_tensor(Shape{n, G, depth, g.windows}, t), image_cols}},
             step_tensor(products, product_dtype), into, MatmulAttrs{.transpose_b = true}.encode());
  else
    run_step(dev, OpKind::matmul,
             {{step_tensor(Shape{n, G, mg, g.windows}, t), args.inputs[0]},
              {step_tensor(Shape{n, G, g.windows, depth}, t), cols_t.get()}},
             step_tensor(products, product_dtype), into);
  if (n > 1) {
    // sum's own kernel keeps its input's dtype: the same reduction, f32 in and the result's dtype
    // out (f32 bits as before; 16-bit floats rounded once, on the store).
    OpIr over_images;
    over_images.kind = OpKind::sum;
    over_images.inputs.push_back(step_tensor(Shape{n, G * mg * depth}, product_dtype));
    reduce::ReduceSpec spec = reduce::plain_spec(over_images);
    spec.out = t;
    reduce::run_reduction(
        dev, "conv_weight_grad", spec, into, args.outputs[0],
        reduce::Geometry{1, static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(G * mg * depth)});
  }
}

}  // namespace

TensorIr step_tensor(Shape shape, DType dtype) {
  TensorIr t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

void run_step(VulkanDevice& dev, OpKind kind, std::initializer_list<std::pair<TensorIr, Buffer*>> inputs,
              const TensorIr& output, Buffer* out, OpAttrs attrs) {
  OpIr op;
  op.kind = kind;
  op.attrs = std::move(attrs);
  std::vector<Buffer*> in;
  EntityId id = 0;  // distinct: kernels that read each entity once tell operands apart by id
  for (const auto& [t, b] : inputs) {
    op.inputs.push_back(t);
    op.inputs.back().id = ++id;
    in.push_back(b);
  }
  op.outputs.push_back(output);
  op.outputs.back().id = ++id;
  Buffer* outs[1] = {out};
  dev.run(op, KernelArgs{std::span<Buffer* const>(in), std::span<Buffer* const>(outs, 1)});
}

void register_conv_grad_kernels(KernelTable& t) {
  t.set(OpKind::conv_input_grad, conv_input_grad_kernel);
  t.set(OpKind::conv_weight_grad, conv_weight_grad_kernel);
}

}  // namespace kiln::vk
