// kiln: tensors on the CPU and on Vulkan GPUs, where every op is asynchronous.
//
//   Tensor   — a handle to an entity on a device; ops on it return new handles at once
//   Device   — where a tensor lives (Device::cpu(), Device::vulkan(i)); to(x, device) moves it
//   Future   — what reading values or syncing a device returns
//   ops      — creation, elementwise, reduce, linalg, layout, index
//   engine   — sync, memory statistics and limits, scheduler counters
#pragma once

#include "engine/bytes.h"
#include "engine/conv.h"
#include "engine/creation.h"
#include "engine/device.h"
#include "engine/elementwise.h"
#include "engine/engine.h"
#include "engine/future.h"
#include "engine/index.h"
#include "engine/interpolate.h"
#include "engine/layout.h"
#include "engine/linalg.h"
#include "engine/pool.h"
#include "engine/recorded_pass.h"
#include "engine/reduce.h"
#include "engine/tensor.h"
#include "engine/transfer.h"
#include "engine/unfold.h"
