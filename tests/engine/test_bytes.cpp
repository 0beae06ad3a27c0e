// Raw bytes in and out of tensors (engine/bytes.h): what io/ and data/ build files and batches
// with. The expected bytes are the host's own representation of the values (memcpy).
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/engine/kiln.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

template <class T> std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

TEST(Bytes, RoundTripEveryCoreDtype) {
  const std::vector<float> f{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const Tensor t = from_vector(f, Shape{2, 3});
  EXPECT_EQ(to_bytes(t).get(), bytes_of(f));
  const Tensor back = from_bytes(std::make_shared<const std::vector<std::byte>>(bytes_of(f)), Shape{3, 2}, DType::f32);
  EXPECT_EQ(back.shape(), (Shape{3, 2}));
  EXPECT_EQ(back.to_vector<float>().get(), f);
  const std::vector<std::int64_t> i{4, -9, 1LL << 40};
  const Tensor ti = from_bytes(std::make_shared<const std::vector<std::byte>>(bytes_of(i)), Shape{3}, DType::i64);
  EXPECT_EQ((ti + 1).to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{5, -8, (1LL << 40) + 1}));
}

TEST(Bytes, WrongSizesAndMissingInputsAreErrors) {
  auto six = std::make_shared<const std::vector<std::byte>>(6);
  test::expect_error([&] { return from_bytes(six, Shape{2}, DType::f32); }, "from_bytes",
                     {"6 bytes", "f32[2]", "takes 8"});
  test::expect_error([&] { return from_bytes(nullptr, Shape{2}, DType::f32); }, "from_bytes", {"no bytes"});
  test::expect_error([] { return to_bytes(Tensor{}); }, "to_bytes", {"undefined"});
  EXPECT_TRUE(device_supports(Device::cpu(), DType::i64));
  EXPECT_FALSE(device_supports(Device::cpu(), DType::f16));
}

}  // namespace
}  // namespace kiln
