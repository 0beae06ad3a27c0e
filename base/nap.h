// Waiting at low latency for work that another thread or a GPU finishes, without holding a
// core: short sleeps between polls. A blocking wait (a fence in the driver, a future's condition
// variable) wakes up tens to a hundred microseconds after the work ends (an interrupt and a
// reschedule; 75-140 us measured on an H200's host after 0.8-3.7 ms matmuls); a 20 us nap wakes
// within about that. Linux stretches every sleep by the thread's timer slack (50 us by default),
// so the slack is lowered while napping and restored after.
#pragma once
#include <sys/prctl.h>

#include <chrono>
#include <thread>

namespace kiln {

// How kiln waits for a GPU (a fence, or a future whose work a scheduler thread holds): polls for
// kPollWindow, then naps kNap between polls until kNapWindow after the start, then blocks.
inline constexpr std::chrono::microseconds kPollWindow{200};
inline constexpr std::chrono::microseconds kNap{20};
inline constexpr std::chrono::milliseconds kNapWindow{20};

// Polls `ready` between naps of `nap` until it holds or `deadline` passes; returns whether it
// holds.
template <class Ready>
bool nap_until(Ready&& ready, std::chrono::microseconds nap, std::chrono::steady_clock::time_point deadline) {
  if (ready()) return true;
  const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // nanoseconds
  bool done = false;
  while (!(done = ready()) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(nap);
  if (slack > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(slack), 0, 0, 0);
  return done;
}

}  // namespace kiln
