// KILN_TRACE=path: a timeline of what the engine ran, written when the process exits as a Chrome
// trace (open it in ui.perfetto.dev or chrome://tracing). Each kernel (by op name), scheduler
// batch and wait on a future is a span on the thread that ran it, so a run of several threads
// shows which kernels ran side by side, where the cores sat idle and what a thread waited for.
// Off (the default), a span costs one relaxed load.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace kiln::trace {

namespace detail {
extern std::atomic<bool> g_on;
std::uint64_t now_ns();
void record(const char* name, const char* category, std::uint64_t begin_ns, std::uint64_t end_ns);
}  // namespace detail

// What KILN_TRACE does, for a program (or a test) that picks the file itself: start() records
// from now on, write() writes what was recorded to the file and stops (also at exit).
void start(const std::string& path);
void write();

inline bool enabled() { return detail::g_on.load(std::memory_order_relaxed); }

// A span from construction to destruction. `name` and `category` must outlive the process's
// trace (string literals, op names).
class Span {
 public:
  Span(const char* name, const char* category) : name_(name), category_(category), begin_(enabled() ? detail::now_ns() : 0) {}
  ~Span() {
    if (begin_) detail::record(name_, category_, begin_, detail::now_ns());
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  const char* category_;
  std::uint64_t begin_;
};

}  // namespace kiln::trace
