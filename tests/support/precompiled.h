// The headers nearly every test file includes, parsed once per build and shared by every suite
// (tests/CMakeLists.txt: target_precompile_headers ... REUSE_FROM). Only headers whose parsing
// costs seconds belong here; a test still includes what it uses, so it compiles without this.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kiln/engine/kiln.h"
#include "kiln/nn/nn.h"
#include "support/reference.h"
