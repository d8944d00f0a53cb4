// GatherScheduler over a fake target: which units each setting prefetches, and when a cap
// holds a prefetch back.
#include "engine/shard/gather_scheduler.h"

#include <vector>

#include "gtest/gtest.h"

namespace accel::shard {
namespace {

using model::Pass;

// Records issued gathers; a unit counts as in flight once issued.
class FakeTarget final : public GatherTarget {
 public:
  explicit FakeTarget(int units) : gathered_(units, false), in_flight_(units, false) {}
  bool is_gathered(int u) const override { return gathered_[u]; }
  bool is_in_flight(int u) const override { return in_flight_[u]; }
  absl::Status IssueGather(int u) override {
    in_flight_[u] = true;
    issued.push_back(u);
    return absl::OkStatus();
  }
  void Land(int u) {
    in_flight_[u] = false;
    gathered_[u] = true;
  }
  std::vector<int> issued;

 private:
  std::vector<bool> gathered_, in_flight_;
};

ShardPlan Plan(const ShardOptions& o) {
  static const model::ModelLayout* layout = [] {
    auto l = model::ModelLayout::Create(model::Gpt2Config{"t", 3, 2, 6, 11, 7});  // root + 3 blocks
    return new model::ModelLayout(std::move(*l));
  }();
  ShardOptions full = o;
  full.strategy = Strategy::kFullShard;
  return *ShardPlan::Create(*layout, 2, 0, full);
}

TEST(GatherSchedulerTest, PassOrderVisitsTheRootThenTheBlocksBackwards) {
  const ShardPlan plan = Plan({});
  FakeTarget target(plan.num_units());
  GatherScheduler s(&plan, &target);
  EXPECT_EQ(s.NextInForward(0), 1);
  EXPECT_EQ(s.NextInForward(plan.num_units() - 1), -1);
  EXPECT_EQ(s.NextInBackward(0), plan.num_units() - 1);
  EXPECT_EQ(s.NextInBackward(2), 1);
  EXPECT_EQ(s.NextInBackward(1), -1);  // the root is never gathered again in backward
}

TEST(GatherSchedulerTest, FsdpFlagsPrefetchTheNextUnitOnly) {
  ShardOptions o;
  o.forward_prefetch = true;
  const ShardPlan plan = Plan(o);
  FakeTarget target(plan.num_units());
  GatherScheduler s(&plan, &target);
  ASSERT_TRUE(s.BeforeUse(0, Pass::kForward).ok());
  ASSERT_TRUE(s.BeforeUse(0, Pass::kForward).ok());  // already in flight: not again
  EXPECT_EQ(target.issued, std::vector<int>{1});
  ASSERT_TRUE(s.BeforeUse(3, Pass::kBackward).ok());  // BACKWARD_PRE by default
  ASSERT_TRUE(s.AfterRelease(3, Pass::kBackward).ok());
  EXPECT_EQ(target.issued, (std::vector<int>{1, 2}));
}

TEST(GatherSchedulerTest, TheInFlightCountAndTheLiveCapHoldPrefetchesBack) {
  ShardOptions o;
  o.forward_prefetch = true;
  o.max_inflight_gathers = 1;
  const ShardPlan plan = Plan(o);
  FakeTarget target(plan.num_units());
  GatherScheduler s(&plan, &target);
  ASSERT_TRUE(s.BeforeUse(0, Pass::kForward).ok());
  ASSERT_TRUE(s.BeforeUse(1, Pass::kForward).ok());  // unit 1 still in flight
  EXPECT_EQ(target.issued, std::vector<int>{1});

  o.max_inflight_gathers = 8;
  o.max_live_numel = plan.unit(0).padded_numel;  // the root alone fills the cap
  const ShardPlan capped = Plan(o);
  FakeTarget target2(capped.num_units());
  target2.Land(0);
  GatherScheduler s2(&capped, &target2);
  ASSERT_TRUE(s2.BeforeUse(0, Pass::kForward).ok());
  EXPECT_TRUE(target2.issued.empty());
}

TEST(GatherSchedulerTest, ABucketGathersAheadUntilItIsFull) {
  ShardOptions o;
  const ShardPlan probe = Plan(o);
  o.prefetch_bucket_numel = probe.unit(1).padded_numel + 1;  // more than one block
  const ShardPlan plan = Plan(o);
  FakeTarget target(plan.num_units());
  GatherScheduler s(&plan, &target);
  ASSERT_TRUE(s.BeforeUse(0, Pass::kForward).ok());
  EXPECT_EQ(target.issued, (std::vector<int>{1, 2}));
}

TEST(GatherSchedulerTest, KeepForReuseCountsTheLaterBlocksTwice) {
  ShardOptions o;
  const ShardPlan probe = Plan(o);
  const int last = probe.num_units() - 1;
  o.max_reuse_distance = 2 * probe.unit(last).numel;
  const ShardPlan plan = Plan(o);
  FakeTarget target(plan.num_units());
  GatherScheduler s(&plan, &target);
  EXPECT_TRUE(s.KeepForReuse(last));
  EXPECT_TRUE(s.KeepForReuse(last - 1));
  EXPECT_FALSE(s.KeepForReuse(last - 2));
  GatherScheduler none(&probe, &target);
  EXPECT_FALSE(none.KeepForReuse(last));
}

}  // namespace
}  // namespace accel::shard
