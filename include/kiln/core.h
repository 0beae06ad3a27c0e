// Tensors, devices, futures and gradients: kiln_core, the layer everything else builds on.
#pragma once
#include "kiln/engine/kiln.h"
#include "kiln/autograd/autograd.h"
