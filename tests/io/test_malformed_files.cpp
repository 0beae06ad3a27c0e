// Every file in tests/data/io/malformed (written by tests/data/gen_io_malformed.py) is refused
// with a kiln::Error naming the file, the tensor where there is one, and what is wrong — by
// every reader — and a load that fails leaves the module exactly as it was.
#include <set>

#include "kiln/io/safetensors_header.h"
#include "io_test_support.h"

namespace kiln::test {
namespace {

struct ModuleSnapshot {
  std::vector<std::string> names;
  std::vector<EntityId> ids;
  std::vector<std::vector<double>> values;
};

ModuleSnapshot snapshot(const nn::Module& m) {
  ModuleSnapshot s;
  for (const nn::NamedTensor& t : m.state_dict()) {
    s.names.push_back(t.name);
    s.ids.push_back(t.tensor.id());
    s.values.push_back(values_of(t.tensor));
  }
  return s;
}

void expect_unchanged(const nn::Module& m, const ModuleSnapshot& before) {
  const ModuleSnapshot after = snapshot(m);
  EXPECT_EQ(after.names, before.names);
  EXPECT_EQ(after.ids, before.ids) << "a failed load replaced a tensor";
  EXPECT_EQ(after.values, before.values);
}

std::vector<std::pair<std::string, std::vector<std::string>>> corpus() {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  const Json index = load_io_json("malformed.json");
  for (const auto& [file, fragments] : index.items()) out.emplace_back(file, fragments.get<std::vector<std::string>>());
  return out;
}

TEST(MalformedFiles, TheIndexAndTheDirectoryAgree) {
  std::set<std::string> listed, present;
  for (const auto& [file, fragments] : corpus()) {
    listed.insert(file);
    ASSERT_FALSE(fragments.empty());
    EXPECT_EQ(fragments.front(), file) << "each error must name its file";
  }
  for (const auto& e : std::filesystem::directory_iterator(io_data("malformed")))
    present.insert(e.path().filename().string());
  EXPECT_EQ(listed, present);
  EXPECT_GE(listed.size(), 40u);
}

TEST(MalformedFiles, EveryReaderRefusesEachWithItsError) {
  for (const auto& [file, fragments] : corpus()) {
    SCOPED_TRACE(file);
    const std::filesystem::path path = io_data("malformed/" + file);
    expect_error([&] { return io::load_file(path); }, "load_file", fragments);
    expect_error([&] { return io::SafeTensorsFile(path); }, "SafeTensorsFile", fragments);
    TorchNet model;
    expect_error([&] { return io::load_model(model, path); }, "load_model", fragments);
    expect_error([&] { return io::load_state(path); }, "load_state", fragments);
  }
}

TEST(MalformedFiles, AFailedLoadChangesNothing) {
  TorchNet model;
  const ModuleSnapshot before = snapshot(model);
  for (const auto& [file, fragments] : corpus()) {
    SCOPED_TRACE(file);
    EXPECT_THROW(io::load_model(model, io_data("malformed/" + file)), Error);
    io::TrainingState state;
    EXPECT_THROW(state = io::load_checkpoint(io_data("malformed/" + file), model), Error);
  }
  expect_unchanged(model, before);
}

// What the fuzz target runs: the parser on bytes in memory, naming whatever source it is given.
TEST(MalformedFiles, TheParserAloneRefusesEachFromBytes) {
  for (const auto& [file, fragments] : corpus()) {
    SCOPED_TRACE(file);
    const std::vector<std::byte> bytes = file_bytes(io_data("malformed/" + file));
    expect_error([&] { return io::parse_safetensors(bytes, file, "parse"); }, "parse", fragments);
  }
}

TEST(MalformedFiles, AFileThatIsNotThereOrNotAFileIsAnError) {
  TorchNet model;
  const ModuleSnapshot before = snapshot(model);
  expect_error([&] { return io::load_model(model, io_data("no_such_file.safetensors")); }, "load_model",
               {"no_such_file.safetensors", "cannot open the file", "No such file"});
  expect_error([&] { return io::load_model(model, io_data("malformed")); }, "load_model",
               {"malformed", "not a regular file"});
  expect_unchanged(model, before);
}

}  // namespace
}  // namespace kiln::test
