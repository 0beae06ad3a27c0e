#include "kiln/train/dashboard_terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string_view>

namespace kiln::train::detail {

namespace {

// The file descriptor behind one of the standard streams, or -1 for any other stream.
int descriptor_of(const std::ostream& out) {
  if (&out == &std::cout) return STDOUT_FILENO;
  if (&out == &std::cerr || &out == &std::clog) return STDERR_FILENO;
  return -1;
}

int positive_env(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (!value) return fallback;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  return end != value && *end == '\0' && n > 0 && n < 100000 ? static_cast<int>(n) : fallback;
}

}  // namespace

TerminalInfo inspect_terminal(const std::ostream& out) {
  TerminalInfo info;
  info.columns = positive_env("COLUMNS", 100);
  info.rows = positive_env("LINES", 40);
  const int fd = descriptor_of(out);
  if (fd < 0 || !::isatty(fd)) return info;
  const char* term = std::getenv("TERM");
  info.interactive = !(term && std::string_view(term) == "dumb");
  info.color = info.interactive && !std::getenv("NO_COLOR");
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    info.columns = size.ws_col;
    if (size.ws_row > 0) info.rows = size.ws_row;
  }
  return info;
}

}  // namespace kiln::train::detail
