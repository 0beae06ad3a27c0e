// The checks an executor keeps for the values it holds (DeferredCheck, devices/device.h): a
// value depends on the checks of the ops it was computed from, until one of its reads resolves
// them. Lists are shared between values and never modified, so a value computed from one
// checked input shares that input's list, and values without checks carry nothing.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "kiln/devices/device.h"

namespace kiln {

class PendingCheck {
 public:
  // `kept`: the buffer the check reads when it resolves (held until then), or null.
  PendingCheck(std::uint64_t seq, std::unique_ptr<DeferredCheck> check, BufferPtr kept);
  std::uint64_t seq() const { return seq_; }
  bool passed() const { return resolved_ && !error_; }
  // The op's error, or null. Only once the device has finished the op; asks it the first time,
  // then lets go of what the check held.
  std::exception_ptr outcome();

 private:
  std::uint64_t seq_;
  std::unique_ptr<DeferredCheck> check_;
  BufferPtr kept_;
  bool resolved_ = false;
  std::exception_ptr error_;
};

using CheckList = std::vector<std::shared_ptr<PendingCheck>>;
using Checks = std::shared_ptr<const CheckList>;

// The checks of a value computed from values with checks `a` and `b`: both lists, without
// duplicates and without checks already passed; `a` or `b` itself where the other adds nothing.
Checks combine_checks(const Checks& a, const Checks& b);
// `checks` plus the check of the op at stream position `seq`, which keeps `kept` (or null) until
// it is resolved.
Checks with_own_check(const Checks& checks, std::uint64_t seq, std::unique_ptr<DeferredCheck> check, BufferPtr kept);
// The error of the earliest op (in stream order) among `checks` that failed, or null. Only once
// the device has finished every op the checks belong to.
std::exception_ptr first_failure(const CheckList& checks);

}  // namespace kiln
