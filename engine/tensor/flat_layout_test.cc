#include "engine/tensor/flat_layout.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FlatLayoutTest, OffsetsAreContiguousInInsertionOrder) {
  FlatLayout layout;
  ASSERT_TRUE(layout.Add("wte", {50, 8}).ok());
  ASSERT_TRUE(layout.Add("ln.bias", {8}).ok());
  ASSERT_TRUE(layout.Add("scalar", {}).ok());
  ASSERT_TRUE(layout.Add("empty", {3, 0}).ok());
  ASSERT_TRUE(layout.Add("attn.w", {8, 24}).ok());
  const auto& e = layout.entries();
  ASSERT_EQ(e.size(), 5u);
  int64_t expected_offset = 0;
  for (const LayoutEntry& entry : e) {
    EXPECT_EQ(entry.offset, expected_offset) << entry.name;
    EXPECT_EQ(entry.numel, NumElements(entry.shape)) << entry.name;
    expected_offset += entry.numel;
  }
  EXPECT_EQ(e[0].numel, 400);
  EXPECT_EQ(e[1].offset, 400);
  EXPECT_EQ(e[2].numel, 1);  // a scalar has one element
  EXPECT_EQ(e[3].numel, 0);
  EXPECT_EQ(e[4].offset, 409);
  EXPECT_EQ(layout.total_elements(), 409 + 192);
  EXPECT_THAT(e[4].shape, ElementsAre(8, 24));
  EXPECT_EQ(e[4].name, "attn.w");
}

TEST(FlatLayoutTest, DuplicateNameIsRejectedAndChangesNothing) {
  FlatLayout layout;
  ASSERT_TRUE(layout.Add("w", {4}).ok());
  absl::Status s = layout.Add("w", {2, 2});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("w"));
  EXPECT_EQ(layout.entries().size(), 1u);
  EXPECT_EQ(layout.total_elements(), 4);
}

TEST(FlatLayoutTest, NegativeDimensionIsRejectedAndChangesNothing) {
  FlatLayout layout;
  absl::Status s = layout.Add("bad", {3, -1});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("[3, -1]"));
  EXPECT_TRUE(layout.entries().empty());
  EXPECT_EQ(layout.total_elements(), 0);
  EXPECT_EQ(layout.Find("bad"), nullptr);
  ASSERT_TRUE(layout.Add("bad", {3}).ok());  // the name was not taken
}

TEST(FlatLayoutTest, FindAndGet) {
  FlatLayout layout;
  ASSERT_TRUE(layout.Add("a", {2}).ok());
  ASSERT_TRUE(layout.Add("b", {3}).ok());
  const LayoutEntry* b = layout.Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->offset, 2);
  EXPECT_EQ(layout.Find("c"), nullptr);
  absl::StatusOr<const LayoutEntry*> got = layout.Get("a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)->numel, 2);
  absl::StatusOr<const LayoutEntry*> missing = layout.Get("h.0.attn");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("h.0.attn"));
}

TEST(FlatLayoutTest, ShapeHelpers) {
  EXPECT_EQ(ShapeToString(std::vector<int64_t>{}), "[]");
  EXPECT_EQ(ShapeToString(std::vector<int64_t>{2, 3, 4}), "[2, 3, 4]");
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(NumElements({2, 3, 4}), 24);
  EXPECT_EQ(NumElements({5, 0}), 0);
}

}  // namespace
}  // namespace accel
