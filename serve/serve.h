// serve/: running a model inside a service — the dynamic request Batcher (gathers single
// requests from many threads into batched forward passes), warm_up (compiles everything a
// model needs before the first request), and an event-driven HttpServer built to stay up under
// hostile load (admission control, deadlines, drain), with Prometheus metrics.
#pragma once
#include "kiln/serve/batcher.h"
#include "kiln/serve/http_metrics.h"
#include "kiln/serve/http_server.h"
#include "kiln/serve/warm_up.h"
