// Optimizers, gradient clipping and learning-rate schedules (kiln_optim).
#pragma once
#include "kiln/optim/optim.h"
