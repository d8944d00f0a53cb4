#include "engine/shard/shard_plan.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

using ::testing::HasSubstr;

model::ModelLayout Layout() {
  auto layout = model::ModelLayout::Create(model::Gpt2Config{"t", 3, 2, 6, 11, 7});  // odd sizes: padding matters
  EXPECT_TRUE(layout.ok());
  return std::move(*layout);
}

TEST(ShardPlanTest, ShardsTileEveryUnitExactlyOnce) {
  model::ModelLayout layout = Layout();
  for (int world : {1, 2, 3, 4}) {
    for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kShardGradOp,
                       Strategy::kFullShard}) {
      ShardOptions o;
      o.strategy = s;
      std::vector<std::vector<int>> owner(layout.num_units());
      for (int u = 0; u < layout.num_units(); ++u) owner[u].assign(layout.unit(u).numel, 0);
      for (int rank = 0; rank < world; ++rank) {
        auto plan = ShardPlan::Create(layout, world, rank, o);
        ASSERT_TRUE(plan.ok()) << plan.status();
        EXPECT_EQ(plan->shard_group_size(), world);
        for (int u = 0; u < plan->num_units(); ++u) {
          const UnitShard& us = plan->unit(u);
          EXPECT_EQ(us.padded_numel % world, 0);
          EXPECT_LT(us.padded_numel - us.numel, world);
          EXPECT_EQ(us.shard_numel * world, us.padded_numel);
          for (int64_t i = 0; i < us.shard_valid; ++i) ++owner[u][us.shard_begin + i];
        }
      }
      for (const auto& unit : owner) {
        for (int c : unit) ASSERT_EQ(c, 1) << "world " << world << " " << StrategyName(s);
      }
    }
  }
}

TEST(ShardPlanTest, StrategyProperties) {
  model::ModelLayout layout = Layout();
  auto props = [&](Strategy s) {
    ShardOptions o;
    o.strategy = s;
    o.hybrid_group_size = 2;
    auto p = ShardPlan::Create(layout, 4, 1, o);
    EXPECT_TRUE(p.ok()) << p.status();
    return std::tuple(p->params_persistent(), p->optimizer_sharded(), p->reduce_per_unit());
  };
  EXPECT_EQ(props(Strategy::kNoShard), std::tuple(true, false, false));
  EXPECT_EQ(props(Strategy::kShardOptimizer), std::tuple(true, true, false));
  EXPECT_EQ(props(Strategy::kShardGradOp), std::tuple(true, true, true));
  EXPECT_EQ(props(Strategy::kFullShard), std::tuple(false, true, true));
  EXPECT_EQ(props(Strategy::kHybridShard), std::tuple(false, true, true));
  EXPECT_EQ(props(Strategy::kHybridShardZero2), std::tuple(true, true, true));
}

TEST(ShardPlanTest, HybridShardsInsideGroups) {
  model::ModelLayout layout = Layout();
  ShardOptions o;
  o.strategy = Strategy::kHybridShard;
  o.hybrid_group_size = 2;
  auto p = ShardPlan::Create(layout, 4, 3, o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->shard_group_size(), 2);
  EXPECT_EQ(p->rank_in_shard_group(), 1);
  EXPECT_EQ(p->shard_group_index(), 1);
  EXPECT_EQ(p->num_replicas(), 2);
  EXPECT_EQ(p->unit(1).shard_begin, p->unit(1).shard_numel);
}

TEST(ShardPlanTest, RejectsBadPlansByName) {
  model::ModelLayout layout = Layout();
  ShardOptions hybrid;
  hybrid.strategy = Strategy::kHybridShard;
  hybrid.hybrid_group_size = 3;
  EXPECT_THAT(ShardPlan::Create(layout, 4, 0, hybrid).status().message(),
              HasSubstr("divides the world"));
  EXPECT_THAT(ShardPlan::Create(layout, 2, 2, {}).status().message(), HasSubstr("rank 2"));
  EXPECT_FALSE(ShardPlan::Create(layout, 0, 0, {}).ok());
  EXPECT_EQ(*ParseStrategy("FULL_SHARD"), Strategy::kFullShard);
  EXPECT_EQ(*ParseStrategy("zero2"), Strategy::kShardGradOp);
  EXPECT_THAT(ParseStrategy("zero4").status().message(), HasSubstr("zero4"));
}

}  // namespace
}  // namespace accel::shard
