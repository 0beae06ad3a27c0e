#include "kiln/train/terminal_text.h"

namespace kiln::train::detail {

namespace {

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The length of the escape sequence starting at text[i] (ESC [ ... final byte), or 0.
std::size_t escape_length(std::string_view text, std::size_t i) {
  if (text[i] != '\x1b' || i + 1 >= text.size() || text[i + 1] != '[') return 0;
  std::size_t j = i + 2;
  while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;
  return j < text.size() ? j - i + 1 : text.size() - i;
}

}  // namespace

std::string concat(std::initializer_list<std::string_view> parts) {
  std::size_t size = 0;
  for (std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (std::string_view part : parts) out.append(part);
  return out;
}

int display_width(std::string_view text) {
  int width = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t n = escape_length(text, i)) {
      i += n;
      continue;
    }
    if (!is_continuation_byte(text[i])) ++width;
    ++i;
  }
  return width;
}

std::string fit_to_width(std::string_view text, int width) {
  if (width <= 0) return {};
  const int full = display_width(text);
  if (full <= width) return std::string(text) + std::string(static_cast<std::size_t>(width - full), ' ');
  std::string out;
  bool escapes = false;
  int columns = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t n = escape_length(text, i)) {
      out.append(text.substr(i, n));
      escapes = true;
      i += n;
      continue;
    }
    if (!is_continuation_byte(text[i]) && ++columns > width - 1) break;
    out += text[i++];
  }
  out += "…";
  if (escapes) out += "\x1b[0m";
  return out;
}

std::string colored(std::string_view text, std::string_view sgr, bool color) {
  if (!color || sgr.empty()) return std::string(text);
  std::string out = "\x1b[";
  out.append(sgr).append("m").append(text).append("\x1b[0m");
  return out;
}

}  // namespace kiln::train::detail
