#include "support/test_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace kiln::test {

std::filesystem::path reference_path(const std::string& relative) {
  return std::filesystem::path(KILN_TEST_DATA_DIR) / relative;
}

Json load_reference_json(const std::string& relative, const std::string& generator) {
  std::ifstream in(reference_path(relative));
  if (!in.good()) {
    ADD_FAILURE() << "missing " << reference_path(relative) << " (run " << generator << ")";
    return Json::object();
  }
  return Json::parse(in);
}

std::vector<std::byte> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::byte> le64_bytes(std::uint64_t value) {
  std::vector<std::byte> out(8);
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
  return out;
}

}  // namespace kiln::test
