// Ctrl-C during training: the first SIGINT asks the run to stop after the step it is in (the
// Learner then writes a checkpoint and returns); a second one exits at once, as a user pressing
// it twice expects. Installed for the scope of a run, the previous handler restored after.
#pragma once

namespace kiln::train {

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Whether Ctrl-C was pressed since the guard was made.
  static bool requested();
  // As if Ctrl-C had been pressed (tests; a program's own stop button).
  static void request();
};

}  // namespace kiln::train
