// Text for a terminal: the width a string takes on screen and cutting or padding it to a width,
// ignoring ANSI escape sequences (colors), so that lines never wrap and a redraw in place moves the
// cursor over exactly the lines it drew. Every character kiln draws (braille, block and box
// characters) takes one column; so does each code point of a user's text, an approximation that
// only wide (CJK) characters break.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>

namespace kiln::train::detail {

// The parts joined: concat({"epoch ", std::to_string(e)}). It replaces `"text" + std::string`,
// whose insert at the front GCC 12 flags with a false -Wrestrict.
std::string concat(std::initializer_list<std::string_view> parts);

int display_width(std::string_view text);
// Cuts text to at most `width` columns (ending with "…" when cut) and pads it with spaces to exactly
// `width`. Escape sequences are kept; a reset is appended when a colored text was cut.
std::string fit_to_width(std::string_view text, int width);
// text wrapped in an SGR color ("36" cyan, "33" yellow, "1" bold) when color is on, else text.
std::string colored(std::string_view text, std::string_view sgr, bool color);

}  // namespace kiln::train::detail
