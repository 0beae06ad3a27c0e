// SmallVector (ops/small_vector.h), the list type of op messages: inline up to N elements, then
// the heap, with std::vector's behaviour for the calls kiln makes. Each case checks against a
// std::vector doing the same.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/ops/small_vector.h"

namespace kiln {
namespace {

using Small = SmallVector<int, 2>;

std::vector<int> as_vector(const Small& s) { return {s.begin(), s.end()}; }

TEST(SmallVector, PushBackPastTheInlineCapacityKeepsEveryElement) {
  Small s;
  std::vector<int> expected;
  for (int i = 0; i < 9; ++i) {
    s.push_back(i * 3);
    expected.push_back(i * 3);
    ASSERT_EQ(as_vector(s), expected) << "after " << i + 1 << " pushes";
  }
  EXPECT_GE(s.capacity(), 9u);
}

TEST(SmallVector, PushBackOfItsOwnElementWhileGrowing) {
  Small s{7, 8};
  s.push_back(s[0]);  // the argument lives in the buffer being replaced
  EXPECT_EQ(as_vector(s), (std::vector<int>{7, 8, 7}));
}

TEST(SmallVector, InsertAtEveryPositionInlineAndOnTheHeap) {
  for (std::size_t start = 0; start < 4; ++start) {
    for (std::size_t pos = 0; pos <= start; ++pos) {
      Small s;
      std::vector<int> expected;
      for (std::size_t i = 0; i < start; ++i) s.push_back(static_cast<int>(i)), expected.push_back(static_cast<int>(i));
      const int extra[] = {100, 101, 102};
      s.insert(s.begin() + pos, std::begin(extra), std::end(extra));
      expected.insert(expected.begin() + static_cast<std::ptrdiff_t>(pos), std::begin(extra), std::end(extra));
      EXPECT_EQ(as_vector(s), expected) << "start " << start << ", pos " << pos;
    }
  }
}

TEST(SmallVector, InsertOfItsOwnRangeWhileGrowing) {
  Small s{1, 2};
  s.insert(s.end(), s.begin(), s.end());
  EXPECT_EQ(as_vector(s), (std::vector<int>{1, 2, 1, 2}));
}

TEST(SmallVector, EraseResizeAssign) {
  Small s{1, 2, 3, 4};
  s.erase(s.begin() + 1);
  EXPECT_EQ(as_vector(s), (std::vector<int>{1, 3, 4}));
  s.resize(5, 9);
  EXPECT_EQ(as_vector(s), (std::vector<int>{1, 3, 4, 9, 9}));
  s.resize(9, s[1]);  // grows onto the heap: the fill value lived in the old buffer
  EXPECT_EQ(as_vector(s), (std::vector<int>{1, 3, 4, 9, 9, 3, 3, 3, 3}));
  s.resize(1);
  EXPECT_EQ(as_vector(s), (std::vector<int>{1}));
  s.assign(3, s[0]);
  EXPECT_EQ(as_vector(s), (std::vector<int>{1, 1, 1}));
  s.clear();
  EXPECT_TRUE(s.empty());
}

TEST(SmallVector, CopiesAndMovesInlineAndHeapContents) {
  for (int n : {0, 1, 2, 3, 7}) {
    Small a;
    for (int i = 0; i < n; ++i) a.push_back(i + 1);
    const std::vector<int> expected = as_vector(a);

    Small copy(a);
    EXPECT_EQ(as_vector(copy), expected);
    Small moved(std::move(a));
    EXPECT_EQ(as_vector(moved), expected);
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    a.push_back(42);         // and usable
    EXPECT_EQ(as_vector(a), (std::vector<int>{42}));

    Small assigned{5, 6, 7};
    assigned = moved;
    EXPECT_EQ(as_vector(assigned), expected);
    Small move_assigned{5, 6, 7};
    move_assigned = std::move(moved);
    EXPECT_EQ(as_vector(move_assigned), expected);
    EXPECT_TRUE(copy == move_assigned);
  }
}

}  // namespace
}  // namespace kiln
