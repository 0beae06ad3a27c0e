#include "kiln/onnx/graph.h"

namespace kiln::onnx::detail {

std::string Node::label() const { return "node '" + name + "' (" + op_type + ")"; }

const Attribute& Node::attribute(const std::string& attr) const {
  const auto it = attributes.find(attr);
  KILN_CHECK(it != attributes.end(), "onnx", label() + ": attribute '" + attr + "' is missing");
  return it->second;
}

namespace {
const Attribute* typed(const Node& n, const std::string& attr, Attribute::Kind kind, const char* kind_name) {
  const auto it = n.attributes.find(attr);
  if (it == n.attributes.end()) return nullptr;
  KILN_CHECK(it->second.kind == kind, "onnx", n.label() + ": attribute '" + attr + "' is not " + kind_name);
  return &it->second;
}
}  // namespace

std::int64_t Node::i(const std::string& attr, std::int64_t fallback) const {
  const auto* a = typed(*this, attr, Attribute::Kind::i, "an int");
  return a ? a->i : fallback;
}

float Node::f(const std::string& attr, float fallback) const {
  const auto* a = typed(*this, attr, Attribute::Kind::f, "a float");
  return a ? a->f : fallback;
}

std::string Node::s(const std::string& attr, const std::string& fallback) const {
  const auto* a = typed(*this, attr, Attribute::Kind::s, "a string");
  return a ? a->s : fallback;
}

std::vector<std::int64_t> Node::ints(const std::string& attr, std::vector<std::int64_t> fallback) const {
  const auto* a = typed(*this, attr, Attribute::Kind::ints, "a list of ints");
  return a ? a->ints : fallback;
}

std::vector<float> Node::floats(const std::string& attr) const {
  const auto* a = typed(*this, attr, Attribute::Kind::floats, "a list of floats");
  return a ? a->floats : std::vector<float>{};
}

std::vector<std::string> Node::strings_or(const std::string& attr, std::vector<std::string> fallback) const {
  const auto* a = typed(*this, attr, Attribute::Kind::strings, "a list of strings");
  return a ? a->strings : fallback;
}

}  // namespace kiln::onnx::detail
