// The gelu_fused workload as separate ops: x * (erf(x / sqrt(2)) + 1) / 2, each intermediate
// handed over to the next op (the fusion tests count its kernels and compare its values).
#pragma once
#include "kiln/engine/kiln.h"

namespace kiln::test {

inline Tensor gelu_chain(Tensor x) {
  Tensor t = mul(x, 0.7071067811865476);
  t = erf(std::move(t));
  t = add(std::move(t), 1.0);
  t = mul(std::move(x), std::move(t));
  return mul(std::move(t), 0.5);
}

}  // namespace kiln::test
