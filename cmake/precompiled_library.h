// The headers most of the library's sources include, parsed once per build into a precompiled
// header (CMakeLists.txt: cmake/layers.cmake: target_precompile_headers on kiln_core, reused by the other layers). Parsing them was half the
// compile time of a typical source at the sanitizers' -O1, and CI builds the library three times.
// Not installed, not seen by consumers; every source still includes what it uses, so it compiles
// without this.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/engine/kiln.h"
#include "kiln/base/error.h"
#include "kiln/ops/registry.h"
