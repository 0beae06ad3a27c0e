// kiln: tensors on the CPU and on Vulkan GPUs, where every op is asynchronous.
//
//   Tensor   — a handle to an entity on a device; ops on it return new handles at once
//   Device   — where a tensor lives (Device::cpu(), Device::vulkan(i)); to(x, device) moves it
//   Future   — what reading values or syncing a device returns
//   ops      — creation, elementwise, reduce, linalg, layout, index
//   engine   — sync, memory statistics and limits, scheduler counters
//   recorded — RecordedPass, RecordedFunction: work recorded once and replayed as one message
#pragma once

#include "kiln/engine/bytes.h"
#include "kiln/engine/conv.h"
#include "kiln/engine/creation.h"
#include "kiln/engine/device.h"
#include "kiln/engine/elementwise.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/future.h"
#include "kiln/engine/index.h"
#include "kiln/engine/interpolate.h"
#include "kiln/engine/layout.h"
#include "kiln/engine/linalg.h"
#include "kiln/engine/norm.h"
#include "kiln/engine/pool.h"
#include "kiln/engine/recorded_function.h"
#include "kiln/engine/recorded_pass.h"
#include "kiln/engine/reduce.h"
#include "kiln/engine/tensor.h"
#include "kiln/engine/transfer.h"
#include "kiln/engine/unfold.h"
