// The header parser on well-formed input (the malformed cases are in test_malformed_files.cpp)
// and the element conversions between file dtypes and kiln dtypes.
#include <cmath>

#include "kiln/io/dtype_conversion.h"
#include "kiln/io/safetensors_header.h"
#include "io_test_support.h"
#include "kiln/ops/half.h"

namespace kiln::test {
namespace {

std::vector<std::byte> file_from(const std::string& json, std::size_t data_bytes) {
  std::vector<std::byte> out = le64_bytes(json.size());
  out.resize(8 + json.size() + data_bytes, std::byte{0});
  std::memcpy(out.data() + 8, json.data(), json.size());
  return out;
}

TEST(SafetensorsHeader, ReadsTensorsMetadataAndOffsets) {
  const std::vector<std::byte> bytes = file_bytes(io_data("valid.safetensors"));
  const io::SafetensorsHeader h = io::parse_safetensors(bytes, "valid.safetensors", "parse");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[0].dtype, io::FileDType::F32);
  EXPECT_EQ(h.tensors[0].shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(h.tensors[1].name, "b");
  EXPECT_EQ(h.tensors[1].begin, 8u);
  EXPECT_EQ(h.tensors[1].end, 16u);
  EXPECT_EQ(h.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(h.data_start % 8, 0u);
  EXPECT_EQ(h.data_start + h.data_size, bytes.size());
}

TEST(SafetensorsHeader, OrdersTensorsByOffsetWhateverTheHeaderOrder) {
  const std::string json =
      R"({"z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"I64","shape":[1],"data_offsets":[4,12]}})";
  const io::SafetensorsHeader h = io::parse_safetensors(file_from(json, 12), "f", "parse");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "z");
  EXPECT_EQ(h.tensors[1].name, "a");
}

TEST(SafetensorsHeader, AcceptsEmptyTensorsScalarsNullMetadataAndNoTensors) {
  const std::string json = R"({"__metadata__":null,"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},)"
                           R"("s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                           R"("e2":{"dtype":"BOOL","shape":[5,0],"data_offsets":[8,8]}}   )";
  const io::SafetensorsHeader h = io::parse_safetensors(file_from(json, 8), "f", "parse");
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.tensors[0].numel() + h.tensors[2].numel(), 0);
  EXPECT_EQ(h.tensors[1].numel(), 1);  // the 0-d tensor (sorted between the empty ones by [begin, end])
  EXPECT_TRUE(h.metadata.empty());
  EXPECT_TRUE(io::parse_safetensors(file_from("{}      ", 0), "f", "parse").tensors.empty());
}

TEST(SafetensorsHeader, KnowsEveryDtypeOfTheFormat) {
  const std::vector<std::pair<std::string, std::size_t>> expected{
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto t = io::parse_file_dtype(expected[i].first);
    ASSERT_TRUE(t.has_value()) << expected[i].first;
    EXPECT_EQ(static_cast<std::size_t>(*t), i) << "safetensors' order sorts the layout";
    EXPECT_EQ(io::file_dtype_name(*t), expected[i].first);
    EXPECT_EQ(io::file_dtype_size(*t), expected[i].second);
  }
  EXPECT_FALSE(io::parse_file_dtype("F128").has_value());
  EXPECT_EQ(io::kiln_dtype(io::FileDType::F32), DType::f32);
  EXPECT_EQ(io::kiln_dtype(io::FileDType::BOOL), DType::bool_);
  EXPECT_FALSE(io::kiln_dtype(io::FileDType::I32).has_value());
}

TEST(DTypeConversion, SixteenBitFloatsDecodeExactlyAndReencodeToTheSameBits) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = io::f16_to_f32(static_cast<std::uint16_t>(h));
    const float b = io::bf16_to_f32(static_cast<std::uint16_t>(h));
    if (!std::isnan(f)) {
      EXPECT_EQ(f16_bits(f), h);
    }
    if (!std::isnan(b)) {
      EXPECT_EQ(bf16_bits(b), h);
    }
  }
  EXPECT_EQ(io::f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(io::f16_to_f32(0x0001), 0x1p-24f);  // the smallest subnormal
  EXPECT_EQ(io::f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(io::bf16_to_f32(0x3f80), 1.0f);
}

TEST(DTypeConversion, ConvertsOnlyBetweenKindsAndReportsIntegersThatDoNotFit) {
  using io::FileDType;
  EXPECT_TRUE(io::convertible(FileDType::F16, FileDType::F32));
  EXPECT_TRUE(io::convertible(FileDType::F64, FileDType::BF16));
  EXPECT_TRUE(io::convertible(FileDType::U8, FileDType::I64));
  EXPECT_FALSE(io::convertible(FileDType::F32, FileDType::I64));
  EXPECT_FALSE(io::convertible(FileDType::I64, FileDType::F32));
  EXPECT_FALSE(io::convertible(FileDType::I64, FileDType::I32));
  EXPECT_FALSE(io::convertible(FileDType::F8_E4M3, FileDType::F32));
  EXPECT_FALSE(io::convertible(FileDType::BOOL, FileDType::I64));

  const std::vector<std::uint64_t> wide{1, 9223372036854775807ull, 9223372036854775808ull};
  std::vector<std::byte> out(wide.size() * 8);
  const auto bad = io::convert_elements(raw_bytes(wide), FileDType::U64, out, FileDType::I64);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(*bad, 2u);

  // A BOOL byte other than 0 or 1 reads as true, never as a bool holding 2.
  const std::vector<std::uint8_t> flags{0, 1, 2, 255};
  std::vector<std::byte> normalized(flags.size());
  EXPECT_FALSE(io::convert_elements(raw_bytes(flags), FileDType::BOOL, normalized, FileDType::BOOL));
  EXPECT_EQ(normalized, (std::vector<std::byte>{std::byte{0}, std::byte{1}, std::byte{1}, std::byte{1}}));
}

}  // namespace
}  // namespace kiln::test
