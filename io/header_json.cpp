// A state machine over nlohmann's SAX events: each state says which event may come next, and
// any other event ends the parse with a message saying what was expected and what came.
#include "kiln/io/header_json.h"

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "kiln/base/error.h"

namespace kiln::io::detail {

namespace {
std::string escaped(std::string_view text, bool escape_quote) {
  constexpr std::size_t kMaxShown = 120;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c == '\\' || (escape_quote && c == '\'')) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace

std::string printable(std::string_view text) { return escaped(text, false); }
std::string in_quotes(std::string_view text) {
  std::string out = "'";
  out += escaped(text, true);
  out += '\'';
  return out;
}

namespace {

using Json = nlohmann::json;

class HeaderHandler final : public nlohmann::json_sax<Json> {
 public:
  HeaderJson result;
  std::string error;  // set when a handler returned false

  bool null() override {
    if (state_ == State::MetadataValue) {  // "__metadata__": null is how serde writes "none"
      state_ = State::TopKeys;
      return true;
    }
    return unexpected("null");
  }
  bool boolean(bool) override { return unexpected("a boolean"); }
  bool number_integer(number_integer_t v) override {
    if (v >= 0) return number_unsigned(static_cast<number_unsigned_t>(v));  // "-0"
    if (state_ == State::ShapeDims) return fail(tensor() + "shape has a negative dimension " + std::to_string(v));
    if (state_ == State::Offsets) return fail(tensor() + "data_offsets has a negative offset " + std::to_string(v));
    return unexpected("a number");
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (state_ == State::ShapeDims) {
      if (entry_.shape.size() >= kMaxFileRank)
        return fail(tensor() + "shape has more than " + std::to_string(kMaxFileRank) + " dimensions");
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return fail(tensor() + "shape dimension " + std::to_string(v) + " does not fit in 64-bit signed");
      entry_.shape.push_back(static_cast<std::int64_t>(v));
      return true;
    }
    if (state_ == State::Offsets) {
      if (offsets_ == 0) entry_.begin = v;
      if (offsets_ == 1) entry_.end = v;
      if (++offsets_ > 2) return fail(tensor() + "data_offsets has more than two numbers");
      return true;
    }
    return unexpected("a number");
  }
  bool number_float(number_float_t, const string_t& text) override {
    if (state_ == State::ShapeDims || state_ == State::Offsets)
      return fail(tensor() + (state_ == State::ShapeDims ? "shape" : "data_offsets") + " holds " + in_quotes(text) +
                  ", not a non-negative integer that fits in 64 bits");
    return unexpected("a number");
  }
  bool string(string_t& v) override {
    if (state_ == State::MetadataString) {
      result.metadata.emplace(std::move(key_), std::move(v));
      state_ = State::MetadataKeys;
      return true;
    }
    if (state_ == State::DType) {
      const auto t = parse_file_dtype(v);
      if (!t) return fail(tensor() + "unknown dtype " + in_quotes(v));
      entry_.dtype = *t;
      state_ = State::EntryKeys;
      return true;
    }
    return unexpected("a string");
  }
  bool binary(binary_t&) override { return unexpected("binary data"); }

  bool start_object(std::size_t) override {
    switch (state_) {
      case State::Start: state_ = State::TopKeys; return true;
      case State::MetadataValue: state_ = State::MetadataKeys; return true;
      case State::EntryValue: state_ = State::EntryKeys; return true;
      default: return unexpected("an object");
    }
  }
  bool key(string_t& k) override {
    if (state_ == State::TopKeys) {
      if (!top_names_.insert(k).second) return fail("the name " + in_quotes(k) + " appears twice in the header");
      if (k == "__metadata__") {
        state_ = State::MetadataValue;
      } else {
        entry_ = TensorInfo{};
        entry_.name = std::move(k);
        fields_ = 0;
        state_ = State::EntryValue;
      }
      return true;
    }
    if (state_ == State::MetadataKeys) {
      if (result.metadata.count(k)) return fail("__metadata__ has the key " + in_quotes(k) + " twice");
      key_ = std::move(k);
      state_ = State::MetadataString;
      return true;
    }
    if (state_ == State::EntryKeys) {
      const unsigned bit = k == "dtype" ? 1u : k == "shape" ? 2u : k == "data_offsets" ? 4u : 0u;
      if (bit == 0) return fail(tensor() + "unknown field " + in_quotes(k) + " (expected dtype, shape, data_offsets)");
      if (fields_ & bit) return fail(tensor() + "the field " + in_quotes(k) + " appears twice");
      fields_ |= bit;
      state_ = bit == 1 ? State::DType : bit == 2 ? State::ShapeStart : State::OffsetsStart;
      return true;
    }
    return unexpected("a key");  // not reachable: keys only come inside objects we entered
  }
  bool end_object() override {
    switch (state_) {
      case State::TopKeys: state_ = State::Done; return true;
      case State::MetadataKeys: state_ = State::TopKeys; return true;
      case State::EntryKeys: return finish_entry();
      default: return unexpected("the end of an object");
    }
  }
  bool start_array(std::size_t) override {
    if (state_ == State::ShapeStart) {
      state_ = State::ShapeDims;
      return true;
    }
    if (state_ == State::OffsetsStart) {
      offsets_ = 0;
      state_ = State::Offsets;
      return true;
    }
    return unexpected("an array");
  }
  bool end_array() override {
    if (state_ == State::ShapeDims) {
      state_ = State::EntryKeys;
      return true;
    }
    if (state_ == State::Offsets) {
      if (offsets_ != 2)
        return fail(tensor() + "data_offsets must hold two numbers [begin, end], got " + std::to_string(offsets_));
      state_ = State::EntryKeys;
      return true;
    }
    return unexpected("the end of an array");
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // nlohmann's message quotes the last token, which may be huge or binary: show it cut and escaped.
    std::string what = e.what();
    const auto colon = what.find("] ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    error = "the header is not valid JSON: " + printable(what);
    return false;
  }

 private:
  enum class State {
    Start,
    TopKeys,
    MetadataValue,
    MetadataKeys,
    MetadataString,
    EntryValue,
    EntryKeys,
    DType,
    ShapeStart,
    ShapeDims,
    OffsetsStart,
    Offsets,
    Done
  };

  std::string tensor() const { return "tensor " + in_quotes(entry_.name) + ": "; }

  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }

  // What the current state wanted, for "expected X, got Y".
  bool unexpected(const char* got) {
    switch (state_) {
      case State::Start: return fail(std::string("the header is not a JSON object (it starts with ") + got + ")");
      case State::MetadataValue:
      case State::MetadataKeys: return fail(std::string("__metadata__ must be an object of strings, got ") + got);
      case State::MetadataString:
        return fail("__metadata__ value of " + in_quotes(key_) + " must be a string, got " + std::string(got));
      case State::EntryValue:
        return fail(tensor() + "its entry must be an object {dtype, shape, data_offsets}, got " + got);
      case State::DType: return fail(tensor() + "dtype must be a string, got " + got);
      case State::ShapeStart: return fail(tensor() + "shape must be an array of integers, got " + got);
      case State::ShapeDims: return fail(tensor() + "shape must hold only integers, got " + got);
      case State::OffsetsStart:
      case State::Offsets: return fail(tensor() + "data_offsets must be an array [begin, end], got " + got);
      default: return fail(std::string("unexpected ") + got + " in the header");
    }
  }

  bool finish_entry() {
    if (fields_ != 7u) {
      std::string missing;
      if (!(fields_ & 1u)) missing += " dtype";
      if (!(fields_ & 2u)) missing += " shape";
      if (!(fields_ & 4u)) missing += " data_offsets";
      return fail(tensor() + "its entry lacks" + missing);
    }
    result.tensors.push_back(std::move(entry_));
    state_ = State::TopKeys;
    return true;
  }

  State state_ = State::Start;
  std::set<std::string> top_names_;
  TensorInfo entry_;
  std::string key_;
  unsigned fields_ = 0;
  unsigned offsets_ = 0;
};

}  // namespace

HeaderJson parse_header_json(std::string_view json, std::string_view source, const char* op) {
  HeaderHandler handler;
  const bool ok = Json::sax_parse(json.data(), json.data() + json.size(), &handler, Json::input_format_t::json,
                                  /*strict=*/true);
  if (!ok) {
    throw Error(op,
                std::string(source) + ": " + (handler.error.empty() ? "the header is not valid JSON" : handler.error));
  }
  return std::move(handler.result);
}

}  // namespace kiln::io::detail
