// Expects `fn()` to throw kiln::Error from `op` whose message holds every fragment (the shapes,
// dtypes and devices an error at the call site must name).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/base/error.h"

namespace kiln::test {

template <class Fn> void expect_error(Fn&& fn, const std::string& op, const std::vector<std::string>& fragments) {
  try {
    (void)fn();
    ADD_FAILURE() << "expected kiln::Error from " << op;
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), op) << e.what();
    for (const std::string& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "missing '" << f << "' in: " << e.what();
  }
}

}  // namespace kiln::test
