// The engine's core contract: handles come back at once, values come back through futures,
// errors at submission name the op and shapes.
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

TEST(EngineBasics, UploadAndReadBack) {
  Tensor t = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.to_vector<float>().get(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

// The CPU device reports the host's memory (/proc/meminfo, read here independently).
TEST(EngineBasics, CpuDeviceProperties) {
  const DeviceProperties p = device_properties(Device::cpu());
  EXPECT_EQ(p.device, Device::cpu());
  EXPECT_EQ(p.name, "cpu");
  EXPECT_EQ(p.type, "cpu");
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key && key != "MemTotal:") meminfo.ignore(256, '\n');
  ASSERT_TRUE(meminfo >> kib);
  EXPECT_NEAR(static_cast<double>(p.memory_bytes), static_cast<double>(kib) * 1024.0, 1 << 20);
  try {
    (void)device_properties(Device::vulkan(64));
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "device_properties");
    EXPECT_NE(std::string(e.what()).find("vulkan:64"), std::string::npos) << e.what();
  }
}

TEST(EngineBasics, FullAndItem) {
  Tensor t = full(Shape{}, 2.5);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_FLOAT_EQ(t.item<float>().get(), 2.5f);
  Tensor i = full(Shape{3}, 7, {DType::i64});
  EXPECT_EQ(i.to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{7, 7, 7}));
  Tensor b = full(Shape{2}, 1, {DType::bool_});
  EXPECT_EQ(b.to_vector<bool>().get(), (std::vector<bool>{true, true}));
}

TEST(EngineBasics, EmptyTensor) {
  Tensor t = zeros(Shape{0, 3});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_TRUE(t.to_vector<float>().get().empty());
}

TEST(EngineBasics, ReadWithWrongDtypeIsAClearError) {
  Tensor t = zeros(Shape{2});
  try {
    (void)t.to_vector<std::int64_t>();
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "to_vector");
    EXPECT_NE(std::string(e.what()).find("f32[2]"), std::string::npos) << e.what();
  }
}

TEST(EngineBasics, FromVectorSizeMismatch) {
  EXPECT_THROW(from_vector(std::vector<float>{1, 2, 3}, Shape{2, 2}), Error);
}

TEST(EngineBasics, UndefinedTensorIsAClearError) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_THROW((void)t.shape(), Error);
}

TEST(EngineBasics, SyncCompletes) {
  Tensor t = ones(Shape{1000});
  Device::cpu().sync().get();
  const EngineCounters c = counters();
  EXPECT_GE(c.ops_run, 2u);
}

TEST(EngineBasics, PrintsValues) {
  Tensor t = from_vector(std::vector<float>{1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(t.str(), "tensor([[1, 2],\n       [3, 4]], shape=[2, 2], dtype=f32)");
}

}  // namespace
}  // namespace kiln
