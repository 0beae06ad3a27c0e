// Helpers the train/ suites share: reading terminal output the way a terminal would.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kiln::test {

// The text without ANSI escape sequences (colors, cursor movement).
inline std::string strip_escapes(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;
      continue;
    }
    out += text[i];
  }
  return out;
}

// Columns on screen: one per code point, escape sequences excluded.
inline int columns_of(std::string_view text) {
  int n = 0;
  for (char c : strip_escapes(text))
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

inline std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t at; (at = text.find('\n', start)) != std::string_view::npos; start = at + 1)
    lines.emplace_back(text.substr(start, at - start));
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}

inline int count_of(std::string_view text, std::string_view what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The braille cells (U+2800..U+28FF) in a text, as their dot bits.
inline std::vector<unsigned> braille_cells(std::string_view text) {
  std::vector<unsigned> cells;
  for (std::size_t i = 0; i + 2 < text.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(text[i]), b1 = static_cast<unsigned char>(text[i + 1]),
               b2 = static_cast<unsigned char>(text[i + 2]);
    if (b0 == 0xE2 && (b1 & 0xFC) == 0xA0) {
      const unsigned code = ((b0 & 0x0Fu) << 12) | ((b1 & 0x3Fu) << 6) | (b2 & 0x3Fu);
      cells.push_back(code - 0x2800);
      i += 2;
    }
  }
  return cells;
}

}  // namespace kiln::test
