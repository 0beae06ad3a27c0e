// Compiled with kiln_data's include path by the layering tests (tests/CMakeLists.txt): data/
// builds on the core alone, so nn/'s headers must not be found.
#include "kiln/nn/module.h"
