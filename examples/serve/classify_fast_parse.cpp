#include "examples/serve/classify_fast_parse.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "examples/fashion_mnist_model.h"

namespace kiln::examples {

namespace fast_parse {

constexpr std::size_t kPixels = kFashionMnistSide * kFashionMnistSide;
constexpr std::size_t kMaxIdLength = 256;  // as classify_api.cpp

class Reader {
 public:
  explicit Reader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool take(char c) {
    skip_space();
    if (p_ < end_ && *p_ == c) return ++p_, true;
    return false;
  }
  bool at_end() {
    skip_space();
    return p_ == end_;
  }

  // A string without escapes or control characters (the rest is the full parser's).
  bool plain_string(std::string_view& out) {
    if (!take('"')) return false;
    const char* start = p_;
    while (p_ < end_ && *p_ != '"') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '\\' || c < 0x20 || c >= 0x7f) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(start, static_cast<std::size_t>(p_ - start));
    ++p_;
    return true;
  }

  // A number as JSON writes it (-?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?); `integer`: it had no
  // fraction or exponent. from_chars alone would take "1.", "01", "inf".
  bool number(std::string_view& token, bool& integer) {
    skip_space();
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ == end_ || !digit(*p_)) return false;
    if (*p_ == '0')
      ++p_;
    else
      while (p_ < end_ && digit(*p_)) ++p_;
    integer = true;
    if (p_ < end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    token = std::string_view(start, static_cast<std::size_t>(p_ - start));
    return true;
  }

  bool number(double& value) {
    std::string_view token;
    bool integer = false;
    if (!number(token, integer)) return false;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    return ec == std::errc() && end == token.data() + token.size();  // 1e400: the full parser's 400
  }

 private:
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  const char* p_;
  const char* end_;
};

bool read_image(Reader& in, std::vector<float>& image) {
  if (!in.take('[')) return false;
  image.clear();
  image.reserve(kPixels);
  for (std::size_t i = 0; i < kPixels; ++i) {
    if (i > 0 && !in.take(',')) return false;
    double x = 0;
    if (!in.number(x) || !(x >= 0.0 && x <= 1.0)) return false;
    image.push_back(static_cast<float>(x));
  }
  return in.take(']');
}

bool read_id(Reader& in, std::string& id_json) {
  std::string_view text;
  bool integer = false;
  if (in.plain_string(text)) {
    if (text.size() > kMaxIdLength) return false;
    id_json = "\"" + std::string(text) + "\"";
    return true;
  }
  // Integers as nlohmann writes them back: no sign on zero, within 64 bits (18 digits is safe).
  if (!in.number(text, integer) || !integer || text == "-0" || text.size() > 18) return false;
  id_json = std::string(text);
  return true;
}

bool read_deadline(Reader& in, std::optional<std::chrono::microseconds>& deadline) {
  double ms = 0;
  if (!in.number(ms) || !(ms >= 0.0 && ms <= 3'600'000.0)) return false;
  deadline = std::chrono::microseconds(static_cast<std::int64_t>(std::llround(ms * 1000.0)));
  return true;
}

}  // namespace fast_parse

using namespace fast_parse;

bool parse_classify_fast(std::string_view body, ClassifyRequest& out) {
  Reader in(body);
  if (!in.take('{')) return false;
  bool image = false, id = false, deadline = false;
  do {
    std::string_view key;
    if (!in.plain_string(key) || !in.take(':')) return false;
    bool ok = false;
    if (key == "image" && !image)
      ok = image = read_image(in, out.image);
    else if (key == "id" && !id)
      ok = id = read_id(in, out.id_json);
    else if (key == "deadline_ms" && !deadline)
      ok = deadline = read_deadline(in, out.deadline);
    if (!ok) return false;
  } while (in.take(','));
  if (!in.take('}')) return false;
  return image && in.at_end();
}

}  // namespace kiln::examples
