// CPU kernels of the elementwise family: one generic kernel that looks up the op's math once
// (devices/cpu/elementwise_math.h) and hands it to the tile walker (elementwise_driver.h).
#include <cstring>

#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/elementwise_driver.h"
#include "kiln/ops/elementwise_rules.h"

namespace kiln::cpu {

namespace {

struct UnaryCtx {
  UnaryFn fn;
  const OpAttrs* attrs;
};
struct BinaryCtx {
  BinaryFn fn;
};
struct WhereCtx {
  WhereFn fn;
};

void unary_tile(const EwTile& t, const void* ctx) {
  const auto* c = static_cast<const UnaryCtx*>(ctx);
  c->fn(t.in[0], t.out, t.n, *c->attrs);
}
void binary_tile(const EwTile& t, const void* ctx) {
  static_cast<const BinaryCtx*>(ctx)->fn(t.in[0], t.stride[0], t.in[1], t.stride[1], t.out, t.n);
}
void where_tile(const EwTile& t, const void* ctx) {
  static_cast<const WhereCtx*>(ctx)->fn(t.in[0], t.stride[0], t.in[1], t.stride[1], t.in[2], t.stride[2], t.out, t.n);
}

// A scalar operand as a 0-d tensor in the compute dtype (the shape rule guarantees that an
// i64 compute dtype only meets whole-number scalars).
struct ScalarValue {
  alignas(8) std::byte bytes[8] = {};
  ScalarValue(double v, DType t) {
    switch (t) {
      case DType::f32: store(static_cast<float>(v)); break;
      case DType::i64: store(static_cast<std::int64_t>(v)); break;
      default: store(v != 0.0); break;
    }
  }
  template <class T>
  void store(T x) {
    std::memcpy(bytes, &x, sizeof x);
  }
};

void elementwise_kernel(const OpIr& op, const KernelArgs& args) {
  const TensorIr& out = op.outputs[0];
  if (out.numel() == 0) return;
  const char* name = op_name(op.kind);
  const DType compute = elementwise_compute_dtype(op);
  const auto unsupported = [&] {
    return Error(
        name, std::string("no CPU kernel computes in ") + dtype_name(compute) + " for input " + describe(op.inputs[0]));
  };

  std::array<EwOperand, 3> operands;
  std::size_t n = 0;
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    operands[n++] = EwOperand{args.inputs[i]->data(), op.inputs[i].dtype,
                              elementwise_operand_dtype(op.kind, i, compute), op.inputs[i].shape};
  void* y = args.outputs[0]->data();
  const std::span<const EwOperand> ops(operands.data(), n);

  if (op.kind == OpKind::where) {
    const WhereCtx ctx{where_fn(compute)};
    if (!ctx.fn) throw unsupported();
    run_elementwise(out.shape, out.dtype, y, ops, where_tile, &ctx);
  } else if (op_info(op.kind).family == OpFamily::binary) {
    const BinaryCtx ctx{binary_fn(op.kind, compute)};
    if (!ctx.fn) throw unsupported();
    const ScalarValue scalar(op.attrs.scalar, compute);
    const EwOperand s{scalar.bytes, compute, compute, Shape{}};
    if (op.attrs.scalar_side == ScalarSide::Rhs) operands[n++] = s;
    if (op.attrs.scalar_side == ScalarSide::Lhs) {
      operands[1] = operands[0];
      operands[0] = s;
      n = 2;
    }
    run_elementwise(out.shape, out.dtype, y, std::span<const EwOperand>(operands.data(), n), binary_tile, &ctx);
  } else {  // unary, cast, clamp
    const UnaryCtx ctx{unary_fn(op.kind, compute), &op.attrs};
    if (!ctx.fn) throw unsupported();
    run_elementwise(out.shape, out.dtype, y, ops, unary_tile, &ctx);
  }
}

}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  for (std::size_t i = 0; i < kOpCount; ++i) {
    const auto kind = static_cast<OpKind>(i);
    if (is_elementwise(kind)) t.set(kind, elementwise_kernel);
  }
}

}  // namespace kiln::cpu
