// Failures inside a kernel reach the futures of every dependent tensor with the op's name, and
// the engine goes on serving other work.
#include <gtest/gtest.h>

#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

class MemoryLimit {
 public:
  explicit MemoryLimit(std::size_t bytes) {
    Device::cpu().sync().get();
    release_cached_memory();
    set_memory_limit(Device::cpu(), memory_stats().bytes_reserved + bytes);
  }
  ~MemoryLimit() { set_memory_limit(Device::cpu(), 0); }
};

TEST(Failures, AllocationFailureReachesTheFuture) {
  Tensor big;
  {
    MemoryLimit limit(1 << 20);
    big = zeros(Shape{1 << 20});  // 4 MiB over a 1 MiB cap
    Device::cpu().sync().get();
  }
  try {
    (void)big.to_vector<float>().get();
    FAIL() << "expected the read to fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "full");
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
}

TEST(Failures, DependentsFailWithTheFirstError) {
  Tensor big;
  {
    MemoryLimit limit(1 << 20);
    big = ones(Shape{1 << 20});
    Device::cpu().sync().get();
  }
  Tensor y = exp(add(big, 1.0));
  Tensor s = sum(y);
  try {
    (void)s.item<float>().get();
    FAIL() << "expected the read to fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "full");  // the op that failed first, not the reader
  }
  // The engine keeps serving.
  Tensor ok = add(ones(Shape{3}), 1.0);
  EXPECT_EQ(ok.to_vector<float>().get(), (std::vector<float>{2, 2, 2}));
}

TEST(Failures, ShapeErrorsAreThrownAtTheCallSite) {
  Tensor a = ones(Shape{2, 3});
  Tensor b = ones(Shape{4});
  try {
    (void)add(a, b);
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "add");
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4]"), std::string::npos) << e.what();
  }
  // a failed submission must not consume its inputs
  EXPECT_EQ(a.to_vector<float>().get().size(), 6u);
}

TEST(Failures, DimOutOfRange) {
  try {
    (void)sum(ones(Shape{2, 3}), {2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "sum");
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

TEST(Failures, UndefinedInput) {
  Tensor undefined;
  EXPECT_THROW((void)exp(undefined), Error);
}

}  // namespace
}  // namespace kiln
