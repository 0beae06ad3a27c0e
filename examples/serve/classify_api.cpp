#include "examples/serve/classify_api.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>

#include "examples/fashion_mnist_model.h"
#include "examples/serve/classify_fast_parse.h"

namespace kiln::examples {

namespace {

using nlohmann::json;

constexpr std::size_t kPixels = kFashionMnistSide * kFashionMnistSide;
constexpr double kMaxDeadlineMs = 3'600'000;  // an hour: anything longer is a mistake, not a deadline
constexpr std::size_t kMaxIdLength = 256;

// "a string", "an array": for messages that name what was sent instead.
std::string kind(const json& v) {
  const std::string name = v.type_name();
  if (v.is_null()) return name;
  return (name[0] == 'a' || name[0] == 'o' ? "an " : "a ") + name;
}

std::vector<float> parse_image(const json& body) {
  const auto it = body.find("image");
  if (it == body.end()) throw BadRequest("\"image\" is missing: it must hold " + std::to_string(kPixels) + " pixels");
  if (!it->is_array() || it->size() != kPixels)
    throw BadRequest("\"image\" must be an array of " + std::to_string(kPixels) +
                     " numbers (28 x 28, row by row), got " +
                     (it->is_array() ? std::to_string(it->size()) + " elements" : kind(*it)));
  std::vector<float> image;
  image.reserve(kPixels);
  for (std::size_t i = 0; i < kPixels; ++i) {
    const json& v = (*it)[i];
    const std::string where = "\"image\"[" + std::to_string(i) + "]";
    if (!v.is_number()) throw BadRequest(where + " is " + kind(v) + ", not a number");
    const double x = v.get<double>();
    // Pixels come scaled to [0, 1] (pixel / 255), as the model was trained on them.
    if (!(x >= 0.0 && x <= 1.0)) throw BadRequest(where + " = " + v.dump() + " is outside [0, 1] (send pixel / 255)");
    image.push_back(static_cast<float>(x));
  }
  return image;
}

std::optional<std::chrono::microseconds> parse_deadline(const json& body) {
  const auto it = body.find("deadline_ms");
  if (it == body.end()) return std::nullopt;
  const double ms = it->is_number() ? it->get<double>() : -1.0;
  if (!(ms >= 0.0 && ms <= kMaxDeadlineMs))
    throw BadRequest("\"deadline_ms\" must be a number of milliseconds from 0 to 3600000, got " + it->dump());
  return std::chrono::microseconds(static_cast<std::int64_t>(std::llround(ms * 1000.0)));
}

std::string parse_id(const json& body) {
  const auto it = body.find("id");
  if (it == body.end()) return {};
  const bool ok =
      it->is_number_integer() || (it->is_string() && it->get_ref<const std::string&>().size() <= kMaxIdLength);
  if (!ok) throw BadRequest("\"id\" must be an integer or a string of at most 256 characters");
  return it->dump();
}

// `id_json` came from json::dump() of a validated id, so it is valid JSON text.
json with_id(const std::string& id_json) {
  json out = json::object();
  if (!id_json.empty()) out["id"] = json::parse(id_json);
  return out;
}

}  // namespace

ClassifyRequest parse_classify_request(const std::string& text) {
  ClassifyRequest fast;
  if (parse_classify_fast(text, fast)) return fast;
  json body;
  try {
    body = json::parse(text);
  } catch (const json::out_of_range& e) {
    // nlohmann's "number overflow parsing '1e400'": JSON, but not a number a double holds.
    throw BadRequest(std::string("the body holds a number out of range: ") + e.what());
  } catch (const json::exception& e) {
    throw BadRequest(std::string("the body is not JSON: ") + e.what());
  }
  if (!body.is_object()) throw BadRequest("the body must be a JSON object, not " + kind(body));
  for (const auto& [key, value] : body.items())
    if (key != "image" && key != "deadline_ms" && key != "id")
      throw BadRequest("unknown field \"" + key + "\" (expected image, deadline_ms, id)");
  ClassifyRequest r;
  r.id_json = parse_id(body);  // first, so that the errors below can name the request
  try {
    r.image = parse_image(body);
    r.deadline = parse_deadline(body);
  } catch (const BadRequest& e) {
    throw BadRequest(e.what(), r.id_json);
  }
  return r;
}

std::string classify_answer(const std::string& id_json, const std::vector<float>& scores) {
  json out = with_id(id_json);
  const auto best = std::distance(scores.begin(), std::max_element(scores.begin(), scores.end()));
  out["class"] = best;
  out["label"] = best < static_cast<std::ptrdiff_t>(std::size(kFashionMnistClasses)) ? kFashionMnistClasses[best] : "?";
  out["scores"] = scores;
  return out.dump();
}

std::string error_answer(const std::string& id_json, const std::string& message) {
  json out = with_id(id_json);
  out["error"] = message;
  return out.dump();
}

}  // namespace kiln::examples
