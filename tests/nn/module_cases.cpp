#include "nn/module_cases.h"

#include <fstream>
#include <mutex>

namespace kiln::test {

const Json& nn_case(const std::string& file, const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, Json> files;  // node-based: references stay valid
  std::lock_guard<std::mutex> lock(mutex);
  auto it = files.find(file);
  if (it == files.end()) {
    std::ifstream in(std::string(KILN_TEST_DATA_DIR) + "/" + file);
    if (!in.good()) throw std::runtime_error("missing tests/data/" + file + " (run its generator, tests/data/gen_*.py)");
    it = files.emplace(file, Json::parse(in)).first;
  }
  for (const Json& c : it->second.at("cases"))
    if (c.at("name") == name) return c;
  throw std::runtime_error("no case " + name + " in tests/data/" + file);
}

}  // namespace kiln::test
