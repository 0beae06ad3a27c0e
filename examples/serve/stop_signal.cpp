#include "examples/serve/stop_signal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include <kiln/core.h>

namespace kiln::examples {

namespace {

// What the handler may touch: plain values set before it is installed.
volatile int g_write_fd = -1;
volatile std::sig_atomic_t g_signals = 0;
struct sigaction g_previous_term {
}, g_previous_int{};

void on_signal(int sig) {
  if (g_signals != 0) ::_exit(1);
  g_signals = 1;
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_write_fd, &byte, 1);  // non-blocking: never stalls the handler
  errno = saved;
}

[[noreturn]] void fail(const std::string& what) {
  throw Error("examples::StopSignal", what + ": " + std::strerror(errno));
}

}  // namespace

StopSignal::StopSignal() {
  KILN_CHECK(g_write_fd < 0, "examples::StopSignal", "only one StopSignal may exist at a time");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail("pipe2");
  if (::fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) fail("fcntl");
  read_fd_ = fds[0];
  g_write_fd = fds[1];
  g_signals = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGTERM, &action, &g_previous_term) != 0 || ::sigaction(SIGINT, &action, &g_previous_int) != 0)
    fail("sigaction");
}

StopSignal::~StopSignal() {
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::close(g_write_fd);
  ::close(read_fd_);
  g_write_fd = -1;
}

int StopSignal::wait() {
  unsigned char byte = 0;
  for (;;) {
    // Polls with a timeout rather than blocking in read(): a handler may be held back until the
    // thread it interrupted returns from its call (ThreadSanitizer does so), and when that thread
    // is this one, blocked on the very pipe the handler writes, a plain read() never returned.
    pollfd p{read_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) fail("polling the signal pipe");
    if (ready <= 0) continue;
    const ssize_t n = ::read(read_fd_, &byte, 1);
    if (n == 1) return byte;
    if (n < 0 && errno == EINTR) continue;
    fail("reading the signal pipe");
  }
}

}  // namespace kiln::examples
