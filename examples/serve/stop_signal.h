// Waiting for SIGTERM or SIGINT without doing work in a signal handler: the handler only writes
// the signal's number to a pipe (write() is async-signal-safe) and wait() reads it on an ordinary
// thread, which then stops the service at leisure. A second signal while the first is handled
// ends the process at once (exit status 1): the way out of a drain that hangs.
#pragma once

namespace kiln::examples {

class StopSignal {
 public:
  StopSignal();   // installs the handlers; one StopSignal at a time per process
  ~StopSignal();  // puts the previous handlers back
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  // Blocks until SIGTERM or SIGINT arrives (or arrived since construction); returns which.
  int wait();

 private:
  int read_fd_ = -1;
};

}  // namespace kiln::examples
