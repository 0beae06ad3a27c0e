// Files the suites read and write: the reference files the generators in tests/data wrote, a
// whole file as bytes, and bytes written back out (malformed inputs, hand-made headers). The
// data/ and io/ suites each had their own copy; a suite that writes files pairs these with
// ScratchDir (support/scratch_dir.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln::test {

using Json = nlohmann::json;

// tests/data/<relative>.
std::filesystem::path reference_path(const std::string& relative);

// tests/data/<relative> parsed. A missing file fails the test with the command that writes it
// (`generator`) and gives an empty object, so that the test goes on to report what it lacks.
Json load_reference_json(const std::string& relative, const std::string& generator);

// Every byte of the file (none when it cannot be read).
std::vector<std::byte> file_bytes(const std::filesystem::path& path);
// Writes `bytes` as the whole file.
void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes);

// `value` as 8 little-endian bytes (the length prefix of a safetensors file).
std::vector<std::byte> le64_bytes(std::uint64_t value);

// The bytes of `values` as they lie in memory (little-endian on every machine kiln runs on).
template <class T> std::vector<std::byte> raw_bytes(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace kiln::test
