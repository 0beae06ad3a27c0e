// kiln::nn: modules, layers, losses and initializers, written with kiln's public API alone, so
// every layer runs on every device, fuses, and takes gradients on any thread.
//
//   Module, Parameter, Buffer, KILN_MODULE — declaring models (nn/module.h)
//   Sequential, ModuleList, ModuleDict     — containers (nn/containers.h)
//   layers                                 — linear, convolution, pooling, normalization, activations
//   functional, losses, init               — the stateless math the layers call
#pragma once

#include "nn/activation_layers.h"
#include "nn/attention.h"
#include "nn/containers.h"
#include "nn/conv_layers.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "nn/norm.h"
#include "nn/positional.h"
#include "nn/pool_layers.h"
#include "nn/rnn.h"
#include "nn/transformer.h"
