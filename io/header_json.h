// The JSON part of a safetensors header, read by a streaming (SAX) parser straight into the
// tensor table. A DOM would cost many times the header's size for a hostile header of a million
// tiny numbers; this parser keeps only what a valid header holds, and stops at the first
// value that does not belong where it is (so nesting depth never grows past three).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/io/safetensors_header.h"

namespace kiln::io::detail {

struct HeaderJson {
  std::vector<TensorInfo> tensors{};  // in the order the header lists them
  std::map<std::string, std::string> metadata{};
};

// Throws kiln::Error(op, "<source>: ...") for invalid JSON, a value of the wrong kind, an
// unknown dtype or field, a duplicate name, or a missing field.
HeaderJson parse_header_json(std::string_view json, std::string_view source, const char* op);

// Text from a file, fit for an error message: control bytes and quotes escaped, long text cut.
std::string printable(std::string_view text);
// The same between single quotes: how errors show a tensor's name ("tensor 'fc.weight': ...").
std::string in_quotes(std::string_view text);

}  // namespace kiln::io::detail
