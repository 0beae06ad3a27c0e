// kiln::nn: modules, layers, losses and initializers, written with kiln's public API alone, so
// every layer runs on every device, fuses, and takes gradients on any thread.
//
//   Module, Parameter, Buffer, KILN_MODULE — declaring models (nn/module.h)
//   Sequential, ModuleList, ModuleDict     — containers (nn/containers.h)
//   layers                                 — linear, convolution, pooling, normalization, activations
//   functional, losses, init               — the stateless math the layers call
#pragma once

#include "kiln/nn/activation_layers.h"
#include "kiln/nn/attention.h"
#include "kiln/nn/containers.h"
#include "kiln/nn/conv_layers.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/nn/linear.h"
#include "kiln/nn/loss.h"
#include "kiln/nn/module.h"
#include "kiln/nn/norm.h"
#include "kiln/nn/positional.h"
#include "kiln/nn/pool_layers.h"
#include "kiln/nn/rnn.h"
#include "kiln/nn/transformer.h"
