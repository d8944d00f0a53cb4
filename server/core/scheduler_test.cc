#include "server/core/scheduler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::server {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Ids(const std::vector<Scheduler::Placement>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.job_id);
  return out;
}

TEST(SchedulerTest, PlacesWholeGangsOnly) {
  Scheduler s(3);
  ASSERT_TRUE(s.Enqueue("a", 2, 0, 1).ok());
  ASSERT_TRUE(s.Enqueue("b", 2, 0, 2).ok());
  auto first = s.Schedule();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].job_id, "a");
  EXPECT_THAT(first[0].slots, ElementsAre(0, 1));
  EXPECT_EQ(s.free_slots(), 1);
  EXPECT_TRUE(s.Schedule().empty());  // b needs 2, one is free: never half-placed
  EXPECT_THAT(s.Queue(), ElementsAre("b"));
  EXPECT_TRUE(s.Release("a"));
  auto second = s.Schedule();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].job_id, "b");
  EXPECT_EQ(second[0].slots.size(), 2u);
}

TEST(SchedulerTest, PriorityFirstThenFifoWithoutBackfill) {
  Scheduler s(4);
  ASSERT_TRUE(s.Enqueue("hold", 3, 0, 1).ok());
  ASSERT_EQ(s.Schedule().size(), 1u);
  ASSERT_TRUE(s.Enqueue("big", 2, 0, 2).ok());
  ASSERT_TRUE(s.Enqueue("small", 1, 0, 3).ok());
  ASSERT_TRUE(s.Enqueue("urgent", 2, 5, 4).ok());
  EXPECT_THAT(s.Queue(), ElementsAre("urgent", "big", "small"));
  // One slot is free and "small" would fit, but it must not jump ahead of the queue head.
  EXPECT_TRUE(s.Schedule().empty());
  s.Release("hold");
  EXPECT_THAT(Ids(s.Schedule()), ElementsAre("urgent", "big"));
  EXPECT_THAT(s.Queue(), ElementsAre("small"));
}

TEST(SchedulerTest, RejectsImpossibleAndDuplicateJobs) {
  Scheduler s(2);
  EXPECT_EQ(s.Enqueue("x", 3, 0, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Enqueue("x", 0, 0, 1).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.Enqueue("x", 1, 0, 1).ok());
  EXPECT_EQ(s.Enqueue("x", 1, 0, 1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(s.Remove("x"));
  EXPECT_FALSE(s.Remove("x"));
  EXPECT_TRUE(s.Schedule().empty());
  EXPECT_EQ(s.free_slots(), 2);
}

}  // namespace
}  // namespace accel::server
