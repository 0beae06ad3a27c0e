// In-place reuse by ownership: an op given the last handle writes into that handle's buffer.
#include <gtest/gtest.h>

#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

TEST(InPlace, TenChainedAddsKeepPeakAtOneTensor) {
  constexpr std::int64_t n = 16 * 1024 * 1024;  // 64 MiB of f32
  constexpr std::size_t bytes = n * sizeof(float);
  Device::cpu().sync().get();
  release_cached_memory();
  reset_peak_memory();
  const MemoryStats before = memory_stats();
  const std::uint64_t reuses_before = counters().inplace_reuses;
  Tensor x = zeros(Shape{n});
  for (int i = 0; i < 10; ++i) x = add(std::move(x), 1.0);
  const std::vector<float> v = x.to_vector<float>().get();
  const MemoryStats after = memory_stats();
  EXPECT_EQ(v.front(), 10.0f);
  EXPECT_EQ(v.back(), 10.0f);
  // One tensor, not eleven: allow the pool's rounding but not a second tensor.
  EXPECT_LT(after.peak_in_use - before.bytes_in_use, bytes + bytes / 2);
  // Unfused, each add reuses the buffer; fused, the one kernel of the ten adds does.
  EXPECT_EQ(counters().inplace_reuses - reuses_before, fusion_enabled() ? 1u : 10u);
}

TEST(InPlace, SharedHandleIsNeverWritten) {
  Tensor x = full(Shape{4}, 2.0);
  Tensor alias = x;  // a second handle: x is not handed over
  Tensor y = add(std::move(x), 1.0);
  EXPECT_EQ(alias.to_vector<float>().get(), (std::vector<float>{2, 2, 2, 2}));
  EXPECT_EQ(y.to_vector<float>().get(), (std::vector<float>{3, 3, 3, 3}));
}

TEST(InPlace, PendingReaderSeesOldValues) {
  // The read is submitted before the in-place op, so it must see the values before the write.
  Tensor x = full(Shape{1024}, 1.0);
  auto before = x.to_vector<float>();
  Tensor y = mul(std::move(x), 5.0);
  EXPECT_EQ(before.get()[0], 1.0f);
  EXPECT_EQ(y.to_vector<float>().get()[0], 5.0f);
}

TEST(InPlace, ViewSharingTheBufferBlocksReuse) {
  Tensor x = full(Shape{2, 3}, 1.0);
  Tensor v = reshape(x, {3, 2});          // shares x's buffer
  Tensor y = add(std::move(x), 1.0);      // x is handed over, but v still reads its buffer
  EXPECT_EQ(v.to_vector<float>().get(), (std::vector<float>(6, 1.0f)));
  EXPECT_EQ(y.to_vector<float>().get(), (std::vector<float>(6, 2.0f)));
}

}  // namespace
}  // namespace kiln
