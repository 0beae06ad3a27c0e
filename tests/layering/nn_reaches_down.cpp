// Compiled with kiln_nn's include path by the layering tests (tests/CMakeLists.txt): the control
// beside nn_reaches_up.cpp. nn/ sees its own headers, the core's and base/'s.
#include "kiln/base/error.h"
#include "kiln/engine/kiln.h"
#include "kiln/nn/module.h"
