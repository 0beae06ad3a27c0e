// save_file / load_file / SafeTensorsFile: every dtype kiln holds comes back bit for bit, the
// header follows the safetensors layout rules, bad input to a save is refused before any file
// is written, and a large file is mapped, not read.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "kiln/io/safetensors_header.h"
#include "io_test_support.h"

namespace kiln::test {
namespace {

TEST(RoundTrip, EveryDtypeComesBackBitForBit) {
  ScratchDir dir;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> floats{0.1f, -0.0f, inf, -inf, std::nanf(""), 1e-45f, 3.4e38f, -7.25f};
  const std::vector<std::int64_t> ints{std::numeric_limits<std::int64_t>::min(), -1, 0,
                                       std::numeric_limits<std::int64_t>::max()};
  const std::vector<bool> flags{true, false, false, true, true};
  const std::vector<nn::NamedTensor> saved{
      {"floats", from_vector(floats, Shape{2, 4})},
      {"ints", from_vector(ints, Shape{4})},
      {"flags", from_vector(flags, Shape{5, 1})},
      {"scalar", scalar(2.5)},
      {"empty", zeros(Shape{0, 3})},
      {"grad", require_grad(from_vector(std::vector<float>{1, 2}, Shape{2}))},
  };
  io::save_file(saved, dir / "t.safetensors", {.metadata = {{"note", "round trip"}}});
  const std::vector<nn::NamedTensor> loaded = io::load_file(dir / "t.safetensors");
  ASSERT_EQ(loaded.size(), saved.size());
  for (const nn::NamedTensor& s : saved) {
    SCOPED_TRACE(s.name);
    const Tensor* l = find_named(loaded, s.name);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->dtype(), s.tensor.dtype());
    EXPECT_EQ(l->shape(), s.tensor.shape());
    EXPECT_TRUE(same_bits(values_of(*l), values_of(s.tensor)));
  }
  EXPECT_EQ(io::SafeTensorsFile(dir / "t.safetensors").metadata().at("note"), "round trip");
  EXPECT_EQ(find_named(loaded, "ints")->to_vector<std::int64_t>().get(), ints);
}

TEST(RoundTrip, TheLayoutFollowsTheSafetensorsRules) {
  ScratchDir dir;
  const std::vector<nn::NamedTensor> tensors{
      {"b", ones(Shape{3})},
      {"flag", from_vector(std::vector<bool>{true}, Shape{1})},
      {"count", from_vector(std::vector<std::int64_t>{5}, Shape{})},
      {"a", ones(Shape{2, 2})},
  };
  io::save_file(tensors, dir / "t.safetensors", {.metadata = {{"format", "pt"}}});
  const std::vector<std::byte> bytes = file_bytes(dir / "t.safetensors");
  const io::SafetensorsHeader h = io::parse_safetensors(bytes, "t", "parse");
  EXPECT_EQ(h.data_start % 8, 0u) << "the header is padded to 8 bytes";
  // Largest dtype first (I64, then F32 by name, then BOOL), back to back from offset 0.
  std::vector<std::string> order;
  for (const io::TensorInfo& t : h.tensors) order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"count", "a", "b", "flag"}));
  // Compact JSON, metadata first, fields in the library's order, spaces as padding.
  const std::string json(reinterpret_cast<const char*>(bytes.data()) + 8, h.data_start - 8);
  EXPECT_EQ(
      json.rfind(R"({"__metadata__":{"format":"pt"},"count":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)", 0), 0u)
      << json;
  EXPECT_EQ(json.find_last_not_of(' '), json.rfind('}'));
}

TEST(RoundTrip, BadTensorsAreRefusedBeforeAnyFileIsWritten) {
  ScratchDir dir;
  const auto path = dir / "t.safetensors";
  expect_error(
      [&] {
        io::save_file({{"w", ones(Shape{1})}, {"w", ones(Shape{2})}}, path);
        return 0;
      },
      "save_file", {"t.safetensors", "'w' appears twice"});
  expect_error(
      [&] {
        io::save_file({{"w", Tensor{}}}, path);
        return 0;
      },
      "save_file", {"'w' is undefined"});
  expect_error(
      [&] {
        io::save_file({{"__metadata__", ones(Shape{1})}}, path);
        return 0;
      },
      "save_file", {"'__metadata__' is reserved"});
  expect_error(
      [&] {
        io::save_file({{"w", ones(Shape{1})}}, path, {.float_dtype = DType::i64});
        return 0;
      },
      "save_file", {"float_dtype must be a floating dtype"});
  expect_error(
      [&] {
        io::save_file({{"w\xff", ones(Shape{1})}}, path);
        return 0;
      },
      "save_file", {"not valid UTF-8"});
  EXPECT_TRUE(dir.files().empty());
  expect_error(
      [&] {
        io::save_file({{"w", ones(Shape{1})}}, dir / "missing_dir" / "t.safetensors");
        return 0;
      },
      "save_file", {"missing_dir", "cannot create a file", "No such file"});
}

TEST(RoundTrip, ReadingOneTensorNeedsNoOtherTensorsBytes) {
  ScratchDir dir;
  const std::string name = "no_such";
  const io::SafeTensorsFile file(io_data("torch_net.safetensors"));
  expect_error([&] { return file.tensor(name); }, "SafeTensorsFile::tensor",
               {"torch_net.safetensors", "no tensor 'no_such'", "holds 11 tensors"});
  ASSERT_NE(file.find("fc.weight"), nullptr);
  EXPECT_EQ(file.bytes(*file.find("fc.weight")).size(), 5u * 4u * 4u);
}

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// A 1 GiB file (sparse: it costs no disk) opens and yields its small tensor while the process
// grows by far less than the file: the reader maps the file instead of reading it.
TEST(RoundTrip, LargeFilesAreMappedNotRead) {
  ScratchDir dir;
  const auto path = dir / "big.safetensors";
  constexpr std::uint64_t kBig = 1ull << 30;
  write_raw_safetensors(path, {{"small", "F32", {4}, raw_bytes(std::vector<float>{1, 2, 3, 4})},
                               {"big", "U8", {static_cast<std::int64_t>(kBig)}, {}, kBig}});
  // The raw writer laid "big" out after "small" but wrote none of its bytes: extend the file.
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size + kBig);

  const std::size_t before = resident_bytes();
  const io::SafeTensorsFile file(path);
  EXPECT_EQ(values_of(file.tensor("small")), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(file.bytes(*file.find("big")).size(), kBig);
  const std::size_t after = resident_bytes();
  EXPECT_LT(after, before + (64u << 20)) << "opening the file read it into memory";
}

}  // namespace
}  // namespace kiln::test
