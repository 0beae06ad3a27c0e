#include "kiln/train/json_file.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <span>

#include "kiln/io/atomic_file.h"

namespace kiln::train {

Json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double number_from_json(const Json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::invalid_argument("\"" + s + "\" is not a number");
}

void save_json(const std::filesystem::path& file, const Json& doc, const char* op) {
  const std::string text = doc.dump();
  io::detail::AtomicFile out(file, op);
  out.write(std::as_bytes(std::span(text)));
  out.commit();
}

Json parse_json_file(const std::filesystem::path& file, const char* op, const char* what) {
  std::ifstream in(file);
  KILN_CHECK(in.good(), op, "cannot open " + file.string());
  try {
    return Json::parse(in);
  } catch (const std::exception& e) {
    throw Error(op, file.string() + " is not " + what + ": " + e.what());
  }
}

}  // namespace kiln::train
