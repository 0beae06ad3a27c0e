// The ONNX graph as plain data: what the parser (graph_parser.cpp) makes of a ModelProto, checked
// once at load (every input produced before use, no cycle, a supported opset), so that running it
// (model.cpp) never touches protobuf.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/onnx/host_tensor.h"
#include "kiln/onnx/onnx.h"

namespace kiln::onnx::detail {

struct Attribute {
  enum class Kind { f, i, s, t, g, floats, ints, strings, other };
  Kind kind = Kind::other;
  float f = 0;
  std::int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const HostTensor> t;
};

struct Node {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;  // "" for an absent optional input
  std::map<std::string, Attribute> attributes;

  // "node 'conv1' (Conv)": how errors name a node.
  std::string label() const;
  bool has(const std::string& attr) const { return attributes.count(attr) != 0; }
  std::int64_t i(const std::string& attr, std::int64_t fallback) const;
  float f(const std::string& attr, float fallback) const;
  std::string s(const std::string& attr, const std::string& fallback) const;
  std::vector<std::int64_t> ints(const std::string& attr, std::vector<std::int64_t> fallback = {}) const;
  std::vector<float> floats(const std::string& attr) const;
  std::vector<std::string> strings_or(const std::string& attr, std::vector<std::string> fallback) const;
  const Attribute& attribute(const std::string& attr) const;  // throws when missing
};

struct Initializer {
  std::string name;
  std::shared_ptr<const HostTensor> value;
  bool is_buffer = false;    // floating, not trained: BatchNormalization's running statistics
  bool is_constant = false;  // not floating (shape constants): kept on the host, not module state
};

struct Graph {
  std::string source;                      // the file, for messages
  std::string serialized;                  // the ModelProto as loaded: Model::save writes it back
  std::int64_t opset = 0;                  // default domain
  std::vector<ValueInfo> inputs, outputs;  // inputs without the initializers
  std::vector<Initializer> initializers;
  std::vector<Node> nodes;  // in an order where each input comes first
  // For each node, the values whose last use it is (dropped after it runs).
  std::vector<std::vector<std::string>> last_uses;
};

// Parses and checks; kiln::Error("onnx", "<source>: ...") on anything wrong.
std::shared_ptr<const Graph> parse_model(std::span<const std::byte> bytes, const std::filesystem::path& base_dir,
                                         const std::string& source);

}  // namespace kiln::onnx::detail
