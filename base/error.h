// kiln::Error: every failure a user can see — bad input at the call site, or a kernel failure
// delivered through a future — carries the op name and the shapes/dtypes/devices involved.
#pragma once
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  Error(std::string op, const std::string& message);
  const std::string& op() const { return op_; }

 private:
  std::string op_;
};

}  // namespace kiln

// Throws kiln::Error(op, message) when cond is false; the message is only built on failure.
#define KILN_CHECK(cond, op, message)                   \
  do {                                                  \
    if (!(cond)) throw ::kiln::Error((op), (message));  \
  } while (0)
