// The JSON files a run keeps beside its checkpoints (history.json, learner.json): numbers that
// survive NaN and infinity (JSON has neither; a diverged loss has both), written atomically, and
// read with one error that names the file and what it should have been.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "kiln/base/error.h"

namespace kiln::train {

using Json = nlohmann::json;

// NaN and infinities as "nan", "inf", "-inf"; finite values with the digits that read back the
// same double.
Json json_number(double v);
double number_from_json(const Json& j);  // throws std::invalid_argument on other strings

// Writes `doc` to `file` through a temporary file renamed into place, flushed to disk.
void save_json(const std::filesystem::path& file, const Json& doc, const char* op);

// Parses `file` (kiln::Error(op, ...) naming it when it cannot be opened or is not JSON).
Json parse_json_file(const std::filesystem::path& file, const char* op, const char* what);

// Parses `file` and hands the document to `read`; a kiln::Error from `read` passes, any other
// failure (unreadable, not JSON, a missing field) becomes kiln::Error(op, "<file> is not <what>: ...").
template <class Read> auto load_json(const std::filesystem::path& file, const char* op, const char* what, Read&& read) {
  const Json doc = parse_json_file(file, op, what);
  try {
    return read(doc);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(op, file.string() + " is not " + what + ": " + e.what());
  }
}
}  // namespace kiln::train
