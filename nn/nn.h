// kiln::nn: modules, layers, losses and initializers, written with kiln's public API alone, so
// every layer runs on every device, fuses, and takes gradients on any thread.
//
//   Module, Parameter, Buffer, KILN_MODULE — declaring models (nn/module.h)
//   Sequential, ModuleList, ModuleDict     — containers (nn/containers.h)
//   layers                                 — linear, convolution, pooling, normalization, activations
//   functional, losses, init               — the stateless math the layers call
//
// A layer is built from its sizes, then one options struct written with designated initializers,
// each layer's `Options`: `nn::Conv2d(1, 32, {3}, {.padding = {1}})`, `nn::LayerNorm({512},
// {.eps = 1e-6})`, `nn::Dropout({.p = 0.1})`. Only sizes (and a required dim, as Softmax's) are
// positional, so a call reads the same whichever settings it leaves at their defaults.
//
// Files: a topic's layers live in <topic>.h / <topic>.cpp (conv.h, norm.h, activation.h, ...);
// the stateless functions they call, declared in functional.h (loss.h for the losses, which have
// no layers), in <topic>_functional.cpp (norm_functional.cpp, linear_functional.cpp, ...).
#pragma once

#include "kiln/nn/activation.h"
#include "kiln/nn/attention.h"
#include "kiln/nn/containers.h"
#include "kiln/nn/conv.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/nn/linear.h"
#include "kiln/nn/loss.h"
#include "kiln/nn/module.h"
#include "kiln/nn/norm.h"
#include "kiln/nn/positional.h"
#include "kiln/nn/pool.h"
#include "kiln/nn/rnn.h"
#include "kiln/nn/transformer.h"
