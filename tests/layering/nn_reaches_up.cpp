// Compiled with kiln_nn's include path by the layering tests (tests/CMakeLists.txt): nn/ lies
// below optim/, so this include must not be found.
#include "kiln/optim/optimizer.h"
