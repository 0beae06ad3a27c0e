#include "kiln/scheduler/pending_checks.h"

#include <algorithm>

namespace kiln {

PendingCheck::PendingCheck(std::uint64_t seq, std::unique_ptr<DeferredCheck> check, BufferPtr kept)
    : seq_(seq), check_(std::move(check)), kept_(std::move(kept)) {}

std::exception_ptr PendingCheck::outcome() {
  if (!resolved_) {
    try {
      error_ = check_->resolve();
    } catch (...) {
      error_ = std::current_exception();  // e.g. the device was lost while reading the flag
    }
    resolved_ = true;
    check_.reset();  // gives the device its flag back
    kept_.reset();
  }
  return error_;
}

namespace {

bool adds_nothing(const Checks& to, const Checks& other) {
  if (!other || other == to) return true;
  return std::all_of(other->begin(), other->end(), [&](const std::shared_ptr<PendingCheck>& c) {
    return c->passed() || (to && std::find(to->begin(), to->end(), c) != to->end());
  });
}

}  // namespace

Checks combine_checks(const Checks& a, const Checks& b) {
  if (adds_nothing(a, b)) return a;
  if (adds_nothing(b, a)) return b;
  auto out = std::make_shared<CheckList>();
  for (const Checks* list : {&a, &b})
    for (const auto& c : **list)
      if (!c->passed() && std::find(out->begin(), out->end(), c) == out->end()) out->push_back(c);
  return out;
}

Checks with_own_check(const Checks& checks, std::uint64_t seq, std::unique_ptr<DeferredCheck> check, BufferPtr kept) {
  auto own = std::make_shared<PendingCheck>(seq, std::move(check), std::move(kept));
  return combine_checks(checks, std::make_shared<const CheckList>(CheckList{std::move(own)}));
}

std::exception_ptr first_failure(const CheckList& checks) {
  std::exception_ptr first;
  std::uint64_t first_seq = 0;
  for (const auto& c : checks) {
    std::exception_ptr e = c->outcome();
    if (e && (!first || c->seq() < first_seq)) first = std::move(e), first_seq = c->seq();
  }
  return first;
}

}  // namespace kiln
