// Modules, layers, losses and initializers (kiln_nn), with the core they build on.
#pragma once
#include "kiln/nn/nn.h"
