#include "engine/comm/ring_algorithms.h"

#include "gtest/gtest.h"

namespace accel::comm {
namespace {

TEST(PaddedLayoutTest, ChunksCoverTheBufferWithShortOrEmptyTails) {
  struct Case {
    size_t count;
    int size;
    std::vector<size_t> lengths;
  };
  for (const Case& c : std::vector<Case>{{8, 4, {2, 2, 2, 2}},
                                         {7, 4, {2, 2, 2, 1}},
                                         {5, 4, {2, 2, 1, 0}},
                                         {1, 4, {1, 0, 0, 0}},
                                         {0, 3, {0, 0, 0}},
                                         {100003, 1, {100003}}}) {
    ChunkLayout layout = PaddedLayout(c.count, c.size);
    size_t next = 0;
    for (int r = 0; r < c.size; ++r) {
      EXPECT_EQ(layout.Offset(r), next) << c.count << "/" << c.size << " chunk " << r;
      EXPECT_EQ(layout.Length(r), c.lengths[r]) << c.count << "/" << c.size << " chunk " << r;
      next += layout.Length(r);
    }
    EXPECT_EQ(next, c.count);
  }
}

}  // namespace
}  // namespace accel::comm
