// optim/: optimizers, gradient clipping and learning-rate schedulers, written against the
// public API of engine/, autograd/ and nn/. An optimizer step is a value: it takes a module and
// its gradients and returns the updated module; each parameter's update fuses into one kernel.
// A whole training step (forward, backward, update) can be recorded once and replayed as one
// message (recorded_step.h).
#pragma once
#include "kiln/optim/clip.h"
#include "kiln/optim/lr_scheduler.h"
#include "kiln/optim/optimizer.h"
#include "kiln/optim/optimizers.h"
#include "kiln/optim/recorded_step.h"
#include "kiln/optim/state.h"
