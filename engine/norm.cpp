#include "kiln/engine/norm.h"

#include "kiln/engine/submit.h"

namespace kiln {

BatchNormStatistics batch_norm_training(Tensor x, Tensor weight, Tensor bias, double eps) {
  const Device device = x.device();
  OpAttrs attrs;
  attrs.scalar = eps;
  Tensor operands[3] = {std::move(x), std::move(weight), std::move(bias)};
  std::vector<Tensor> out = detail::submit(OpKind::batch_norm, operands, 3, attrs, device);
  return {std::move(out[0]), std::move(out[1]), std::move(out[2])};
}

}  // namespace kiln
