// Serving a model to many threads: batching and warm-up (kiln_serve).
#pragma once
#include "kiln/serve/serve.h"
