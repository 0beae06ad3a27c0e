// serve/: running a model inside a service — the dynamic request Batcher (gathers single
// requests from many threads into batched forward passes) and warm_up (compiles everything a
// model needs before the first request).
#pragma once
#include "kiln/serve/batcher.h"
#include "kiln/serve/warm_up.h"
