// What a device runs natively: the dtypes it holds, the ops it has kernels for and the variants
// of them it reads as they are. A device fills one in when it opens; the executor asks runs(op)
// of every message before it plans a batch, and an op a device lacks is rewritten into ops it
// has by the decomposition rules of ops/decompositions.h. engine/ never asks: it checks the
// inputs and submits the high-level op on every device, whatever its kind.
#pragma once
#include <bitset>
#include <cstdint>
#include <initializer_list>

#include "kiln/ops/attrs_linalg.h"
#include "kiln/ops/ir.h"

namespace kiln {

// A set of dtypes, one bit each.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> types) {
    for (DType t : types) bits_ |= bit(t);
  }
  constexpr bool has(DType t) const { return (bits_ & bit(t)) != 0; }
  constexpr DTypeSet& add(DType t) { return bits_ |= bit(t), *this; }
  constexpr DTypeSet& remove(DType t) { return bits_ &= ~bit(t), *this; }

 private:
  static constexpr std::uint32_t bit(DType t) { return std::uint32_t{1} << static_cast<unsigned>(t); }
  std::uint32_t bits_ = 0;
};

struct DeviceCapabilities {
  // Dtypes a tensor on the device may have (checked at submission: DeviceBackend::supports).
  DTypeSet dtypes{DType::f32, DType::i64, DType::bool_};
  // Ops with a kernel of their own; every op unless the device clears it. (Control ops are the
  // executor's own and always run.)
  std::bitset<kOpCount> ops = std::bitset<kOpCount>().set();
  // Dtypes whose matmul reads an operand transposed in place (MatmulAttrs, ops/attrs_linalg.h);
  // elsewhere a transposed operand is copied first.
  DTypeSet matmul_transposed;

  // Whether `op` runs on the device as it is: its kind has a kernel, in the variant it asks for.
  bool runs(const OpIr& op) const {
    if (!ops.test(static_cast<std::size_t>(op.kind))) return false;
    if (op.kind == OpKind::matmul && transposed_operand(op)) return matmul_transposed.has(op.inputs[0].dtype);
    return true;
  }
  static bool transposed_operand(const OpIr& op) {
    const MatmulAttrs t = MatmulAttrs::decode(op);
    return t.transpose_a || t.transpose_b;
  }
};

}  // namespace kiln
