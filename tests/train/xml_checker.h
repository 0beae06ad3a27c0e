// A small XML reader for the tests: it checks that a document is well-formed (every element
// closed in order, attributes quoted and unique, '<' and '&' only where markup allows, only XML's
// own entities) and returns its element tree with entities decoded, so tests can count the
// report's charts and read their attributes. The report is written so an XML parser reads it;
// this is that parser, without a dependency.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<XmlElement> children;
  std::string text;  // all text inside, children's included, entities decoded

  std::string attribute(const std::string& key) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? std::string() : it->second;
  }
  // Every descendant named `name`, in document order.
  std::vector<const XmlElement*> find_all(std::string_view name) const;
  bool has_class(std::string_view cls) const;
};

// Throws std::runtime_error naming the offset and the problem when the document is not well-formed.
XmlElement parse_xml(std::string_view document);

}  // namespace kiln::test
