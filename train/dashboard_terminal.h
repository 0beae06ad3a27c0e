// What the dashboard's output stream is connected to: a terminal (std::cout or std::cerr on a
// TTY) gets the live view, with its size read each frame so a resized window is followed;
// anything else (a file, a pipe, a string stream) gets plain lines.
#pragma once
#include <iosfwd>

namespace kiln::train::detail {

struct TerminalInfo {
  bool interactive = false;  // a TTY that understands cursor movement (TERM is not "dumb")
  bool color = false;        // interactive and NO_COLOR unset (no-color.org)
  int columns = 100;         // TIOCGWINSZ, else $COLUMNS, else 100
  int rows = 40;             // TIOCGWINSZ, else $LINES, else 40
};

TerminalInfo inspect_terminal(const std::ostream& out);

}  // namespace kiln::train::detail
