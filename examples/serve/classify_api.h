// examples/serve's wire format: the JSON body of a classification request and of its answers,
// kept apart from the HTTP server so that what makes a body malformed is decided in one place.
//
//   request:  {"image": [784 numbers in 0..1], "deadline_ms": 50, "id": "abc"}   (the last two optional)
//   answer:   {"id": "abc", "class": 7, "label": "Sneaker", "scores": [10 logits]}
//   an error: {"id": "abc", "error": "what went wrong"}
#pragma once
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kiln::examples {

struct ClassifyRequest {
  std::vector<float> image;                           // 28 x 28 pixels, row by row, each in [0, 1]
  std::optional<std::chrono::microseconds> deadline;  // counted from when the request was read
  std::string id_json;                                // the "id" field as JSON text, echoed back; empty: none
};

// A body the service cannot take; what() names the field and what is wrong with it (HTTP 400).
class BadRequest : public std::runtime_error {
 public:
  explicit BadRequest(const std::string& message, std::string id_json = {})
      : std::runtime_error(message), id_json_(std::move(id_json)) {}
  const std::string& id_json() const { return id_json_; }  // the request's id, when it had a valid one

 private:
  std::string id_json_;
};

// Throws BadRequest for anything but an object with a valid "image" and optional valid
// "deadline_ms" (0 to one hour) and "id" (a string of at most 256 characters or an integer).
ClassifyRequest parse_classify_request(const std::string& body);

// The answer for `scores` (one per class): the best class, its label, the scores.
std::string classify_answer(const std::string& id_json, const std::vector<float>& scores);
std::string error_answer(const std::string& id_json, const std::string& message);

}  // namespace kiln::examples
