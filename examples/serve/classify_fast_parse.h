// The common case of examples/serve's request body, read without building a JSON document: an
// object of "image" (784 plain JSON numbers in [0, 1]), and optionally "id" (an integer or a
// plain ASCII string) and "deadline_ms". It takes a fifth of the time of nlohmann's parse, which
// at thousands of requests per second would take a core of its own. Whatever it does not
// recognise — an escape, an odd number, a value out of range, an unknown or repeated field —
// it leaves to parse_classify_request's full parser, the one place that says what is wrong.
#pragma once
#include <string_view>

#include "examples/serve/classify_api.h"

namespace kiln::examples {

// True when `body` is a valid request of the common form, read into `out` exactly as
// parse_classify_request reads it; false otherwise (`out` then holds nothing of use).
bool parse_classify_fast(std::string_view body, ClassifyRequest& out);

}  // namespace kiln::examples
