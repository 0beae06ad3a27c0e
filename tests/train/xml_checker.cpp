#include "xml_checker.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace kiln::test {

namespace {

class XmlReader {
 public:
  explicit XmlReader(std::string_view doc) : doc_(doc) {}

  XmlElement document() {
    skip_prolog();
    if (!starts_with("<")) fail("expected the root element");
    XmlElement root = element();
    skip_misc();
    if (pos_ != doc_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::ostringstream s;
    s << "not well-formed at offset " << pos_ << ": " << what << " near '" << doc_.substr(pos_, 40) << "'";
    throw std::runtime_error(s.str());
  }
  bool starts_with(std::string_view s) const { return doc_.substr(pos_, s.size()) == s; }
  void skip_space() {
    while (pos_ < doc_.size() && std::isspace(static_cast<unsigned char>(doc_[pos_]))) ++pos_;
  }
  void skip_past(std::string_view end) {
    const std::size_t at = doc_.find(end, pos_);
    if (at == std::string_view::npos) fail("unterminated markup, expected '" + std::string(end) + "'");
    pos_ = at + end.size();
  }
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts_with("<!--"))
        skip_past("-->");
      else if (starts_with("<?"))
        skip_past("?>");
      else
        return;
    }
  }
  void skip_prolog() {
    skip_misc();
    if (starts_with("<!DOCTYPE")) skip_past(">");
    skip_misc();
  }
  std::string name() {
    const std::size_t start = pos_;
    auto ok = [](char c, bool first) {
      return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
             (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'));
    };
    while (pos_ < doc_.size() && ok(doc_[pos_], pos_ == start)) ++pos_;
    if (pos_ == start) fail("expected a name");
    return std::string(doc_.substr(start, pos_ - start));
  }
  // Decodes an entity at pos_ ('&' ... ';').
  std::string entity() {
    const std::size_t end = doc_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 12) fail("'&' that starts no entity");
    const std::string_view body = doc_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    if (body == "amp") return "&";
    if (body == "lt") return "<";
    if (body == "gt") return ">";
    if (body == "quot") return "\"";
    if (body == "apos") return "'";
    if (body.size() >= 2 && body[0] == '#') {
      const bool hex = body[1] == 'x';
      const std::string digits(body.substr(hex ? 2 : 1));
      if (digits.empty() ||
          digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
        fail("bad character reference");
      const unsigned long code = std::stoul(digits, nullptr, hex ? 16 : 10);
      std::string utf8;  // encoded, so decoded text compares with the original
      if (code < 0x80)
        utf8 += static_cast<char>(code);
      else if (code < 0x800)
        utf8 += {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
      else
        utf8 += {static_cast<char>(0xE0 | (code >> 12)), static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
                 static_cast<char>(0x80 | (code & 0x3F))};
      return utf8;
    }
    fail("unknown entity '&" + std::string(body) + ";' (XML knows only amp, lt, gt, quot, apos)");
  }
  std::string attribute_value() {
    if (pos_ >= doc_.size() || (doc_[pos_] != '"' && doc_[pos_] != '\'')) fail("attribute value not quoted");
    const char quote = doc_[pos_++];
    std::string value;
    while (pos_ < doc_.size() && doc_[pos_] != quote) {
      if (doc_[pos_] == '<') fail("'<' in an attribute value");
      if (doc_[pos_] == '&')
        value += entity();
      else
        value += doc_[pos_++];
    }
    if (pos_ >= doc_.size()) fail("unterminated attribute value");
    ++pos_;
    return value;
  }
  XmlElement element() {
    ++pos_;  // '<'
    XmlElement e;
    e.name = name();
    for (;;) {
      skip_space();
      if (starts_with("/>")) {
        pos_ += 2;
        return e;
      }
      if (starts_with(">")) {
        ++pos_;
        break;
      }
      const std::string key = name();
      skip_space();
      if (!starts_with("=")) fail("attribute '" + key + "' without a value");
      ++pos_;
      skip_space();
      if (!e.attributes.emplace(key, attribute_value()).second) fail("attribute '" + key + "' twice");
    }
    for (;;) {
      if (pos_ >= doc_.size()) fail("<" + e.name + "> is never closed");
      if (starts_with("</")) {
        pos_ += 2;
        const std::string closing = name();
        if (closing != e.name) fail("</" + closing + "> closes <" + e.name + ">");
        skip_space();
        if (!starts_with(">")) fail("expected '>'");
        ++pos_;
        return e;
      }
      if (starts_with("<!--")) {
        skip_past("-->");
      } else if (starts_with("<")) {
        e.children.push_back(element());
        e.text += e.children.back().text;
      } else if (doc_[pos_] == '&') {
        e.text += entity();
      } else {
        e.text += doc_[pos_++];
      }
    }
  }

  std::string_view doc_;
  std::size_t pos_ = 0;
};

void collect(const XmlElement& e, std::string_view name, std::vector<const XmlElement*>& out) {
  for (const XmlElement& child : e.children) {
    if (child.name == name) out.push_back(&child);
    collect(child, name, out);
  }
}

}  // namespace

std::vector<const XmlElement*> XmlElement::find_all(std::string_view element_name) const {
  std::vector<const XmlElement*> out;
  collect(*this, element_name, out);
  return out;
}

bool XmlElement::has_class(std::string_view cls) const {
  std::istringstream classes(attribute("class"));
  for (std::string c; classes >> c;)
    if (c == cls) return true;
  return false;
}

XmlElement parse_xml(std::string_view document) { return XmlReader(document).document(); }

}  // namespace kiln::test
