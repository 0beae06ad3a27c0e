#include "kiln/train/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace kiln::train {

namespace {
std::atomic<int> g_presses{0};
struct sigaction g_previous {};

extern "C" void on_sigint(int) {
  // Only async-signal-safe calls here: an atomic, write and _exit.
  if (g_presses.fetch_add(1) >= 1) {
    constexpr char msg[] = "\ninterrupted again: exiting now\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(130);
  }
  constexpr char msg[] = "\ninterrupted: finishing the step, writing a checkpoint (Ctrl-C again to exit now)\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}
}  // namespace

InterruptGuard::InterruptGuard() {
  g_presses = 0;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous);
}

InterruptGuard::~InterruptGuard() { sigaction(SIGINT, &g_previous, nullptr); }

bool InterruptGuard::requested() { return g_presses.load() > 0; }
void InterruptGuard::request() { g_presses.fetch_add(1); }

}  // namespace kiln::train
