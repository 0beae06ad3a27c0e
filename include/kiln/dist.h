// Data-parallel training across processes: process groups, collectives, replicated models with
// averaged gradients, the distributed sampler (dist/dist.h).
#pragma once
#include "kiln/dist/dist.h"
