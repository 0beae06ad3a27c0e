// Batch normalization's training-mode op: per channel (dim 1) the batch's mean and biased
// variance over every other dim, and x normalized with them and scaled and shifted by weight
// and bias, in one op whose CPU kernel reads x once (ops/norm.cpp); its gradient is one
// batch_norm_backward op. nn::batch_norm builds the layer's semantics (running statistics,
// eval mode) on it.
#pragma once
#include "kiln/engine/tensor.h"

namespace kiln {

struct BatchNormStatistics {
  Tensor output;  // like x
  Tensor mean;    // [C]
  Tensor var;     // [C], biased
};

// x [N, C, *]; weight and bias [C] of x's dtype.
BatchNormStatistics batch_norm_training(Tensor x, Tensor weight, Tensor bias, double eps);

}  // namespace kiln
