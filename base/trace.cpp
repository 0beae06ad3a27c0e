#include "kiln/base/trace.h"

#include <unistd.h>
#include <sys/syscall.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/base/log.h"

namespace kiln::trace::detail {

namespace {

struct Event {
  const char* name;
  const char* category;
  std::uint64_t begin_ns, end_ns;
  long tid;
};

struct Trace {
  std::mutex lock;
  std::vector<Event> events;
  std::string path;         // where write() puts them; empty: not tracing
  bool registered = false;  // write() is registered to run at exit
};

Trace& the_trace() {
  static Trace* t = new Trace;  // never destroyed: spans may end during static destruction
  return *t;
}

long thread_id() {
  thread_local const long tid = static_cast<long>(syscall(SYS_gettid));
  return tid;
}

}  // namespace
}  // namespace kiln::trace::detail

namespace kiln::trace {

// Writes the events as Chrome trace JSON ("X" events, microseconds since the first event).
void write() {
  detail::Trace& t = detail::the_trace();
  detail::g_on.store(false);
  const std::lock_guard guard(t.lock);
  if (t.path.empty()) return;
  std::FILE* f = std::fopen(t.path.c_str(), "w");
  if (!f) {
    logger().error("KILN_TRACE: cannot write {}", t.path);
    return;
  }
  std::uint64_t origin = UINT64_MAX;
  for (const detail::Event& e : t.events) origin = std::min(origin, e.begin_ns);
  std::fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n", f);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const detail::Event& e = t.events[i];
    std::fprintf(f, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %ld, \"ts\": %.3f, \"dur\": %.3f}%s\n",
                 e.name, e.category, static_cast<int>(getpid()), e.tid, static_cast<double>(e.begin_ns - origin) / 1e3,
                 static_cast<double>(e.end_ns - e.begin_ns) / 1e3, i + 1 < t.events.size() ? "," : "");
  }
  std::fputs("]}\n", f);
  std::fclose(f);
  t.events.clear();
  t.path.clear();
}

void start(const std::string& path) {
  detail::Trace& t = detail::the_trace();
  {
    const std::lock_guard guard(t.lock);
    if (!t.registered) std::atexit(kiln::trace::write);
    t.registered = true;
    t.path = path;
    t.events.clear();
  }
  detail::g_on.store(true);
}

}  // namespace kiln::trace

namespace kiln::trace::detail {

namespace {

bool start_from_environment() {
  const char* path = std::getenv("KILN_TRACE");
  if (!path || !*path) return false;
  Trace& t = the_trace();
  t.path = path;
  t.registered = true;
  std::atexit(kiln::trace::write);
  return true;
}

}  // namespace

std::atomic<bool> g_on{start_from_environment()};

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void record(const char* name, const char* category, std::uint64_t begin_ns, std::uint64_t end_ns) {
  Trace& t = the_trace();
  const long tid = thread_id();
  const std::lock_guard guard(t.lock);
  if (g_on.load(std::memory_order_relaxed)) t.events.push_back(Event{name, category, begin_ns, end_ns, tid});
}

}  // namespace kiln::trace::detail
