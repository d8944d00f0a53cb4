// Traffic by link, end to end through the trainer: 4 ranks (threads over loopback gloo) told
// they run 2 per node on 2 nodes; every rank's statistics record splits the bytes it sent in a
// step into within-node and cross-node, and both match shard::RingTrafficPerStep — the ring's
// peers under the strategy's groups — within 1% (the rest is the loss and norm all-gathers and
// the statistics gather itself: a few hundred bytes).
#include <unistd.h>

#include <string>

#include "engine/kernels/threading.h"
#include "engine/model/gpt2_config.h"
#include "engine/shard/ring_traffic.h"
#include "gtest/gtest.h"
#include "tests/sharding/gang.h"

namespace accel::testing {
namespace {

using shard::Strategy;

constexpr int kWorld = 4, kPerNode = 2;

class TrafficByLinkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    kernels::SetNumThreads(1);
    dir_ = new std::string(::testing::TempDir() + "/traffic_link_" + std::to_string(::getpid()));
    ASSERT_TRUE(WriteGangInputs(*dir_, Config()).ok());
  }
  static void TearDownTestSuite() {
    (void)Env::Default()->DeleteRecursively(*dir_);
    delete dir_;
  }
  // Large enough that the statistics gather (about 1 KB a rank) stays under 1% of a step.
  static model::Gpt2Config Config() { return {"link", 2, 4, 64, 256, 16}; }
  static std::string* dir_;
};
std::string* TrafficByLinkTest::dir_ = nullptr;

TEST_F(TrafficByLinkTest, EveryRanksCrossNodeBytesMatchTheRingTheory) {
  auto layout = model::ModelLayout::Create(Config());
  ASSERT_TRUE(layout.ok());
  const std::vector<int> nodes = shard::BlockPlacement(kWorld, kPerNode);
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardGradOp, Strategy::kFullShard,
                     Strategy::kHybridShard, Strategy::kHybridShardZero2}) {
    train::TrainOptions o = GangOptions(*dir_, s, 1, 2);
    o.shard.hybrid_group_size = kPerNode;  // hybrid: shard within a node, replicate across
    o.steps = 3;
    o.rank_stats_every = 1;
    auto run = RunGang(o, kWorld, /*as_device=*/false, nodes);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->steps.size(), 3u);
    const std::string name(shard::StrategyName(s));
    int64_t measured_cross = 0;
    for (int r = 0; r < kWorld; ++r) {
      auto theory = shard::RingTrafficPerStep(*layout, o.shard, kWorld, nodes, r);
      ASSERT_TRUE(theory.ok()) << theory.status();
      // Step 2's record: steps 0 and 1 also hold the start-up and the first statistics gather.
      const train::RankStats& got = run->steps[2].ranks[r];
      const double sent = double(theory->sent), cross = double(theory->sent_cross_node);
      EXPECT_NEAR(double(got.bytes_sent), sent, 0.01 * sent) << name << " rank " << r;
      EXPECT_NEAR(double(got.bytes_sent_cross_node), cross, 0.01 * sent) << name << " rank " << r;
      if (cross > 0) {
        EXPECT_NEAR(double(got.bytes_sent_cross_node), cross, 0.01 * cross)
            << name << " rank " << r;
      }
      measured_cross += got.bytes_sent_cross_node;
    }
    auto all = shard::RingTrafficPerStepAllRanks(*layout, o.shard, kWorld, nodes);
    ASSERT_TRUE(all.ok());
    EXPECT_NEAR(double(measured_cross), double(all->sent_cross_node),
                0.01 * double(all->sent_cross_node))
        << name;
    // The ring crosses at ranks 1 and 3 (1→2, 3→0); a hybrid shard group never leaves a node,
    // its replicate group always does.
    if (s == Strategy::kHybridShard || s == Strategy::kHybridShardZero2) {
      EXPECT_GT(run->steps[2].ranks[0].bytes_sent_cross_node, 0) << name;
      EXPECT_LT(run->steps[2].ranks[0].bytes_sent_cross_node, run->steps[2].ranks[0].bytes_sent / 2)
          << name;
    } else {
      EXPECT_EQ(run->steps[2].ranks[0].bytes_sent_cross_node, 0) << name;
      EXPECT_EQ(run->steps[2].ranks[1].bytes_sent_cross_node, run->steps[2].ranks[1].bytes_sent)
          << name;
    }
  }
}

TEST_F(TrafficByLinkTest, HybridShardCrossesLessThanFullShard) {
  auto layout = model::ModelLayout::Create(Config());
  ASSERT_TRUE(layout.ok());
  const std::vector<int> nodes = shard::BlockPlacement(kWorld, kPerNode);
  shard::ShardOptions full, hybrid;
  full.strategy = Strategy::kFullShard;
  hybrid.strategy = Strategy::kHybridShard;
  hybrid.hybrid_group_size = kPerNode;
  auto f = shard::RingTrafficPerStepAllRanks(*layout, full, kWorld, nodes);
  auto h = shard::RingTrafficPerStepAllRanks(*layout, hybrid, kWorld, nodes);
  ASSERT_TRUE(f.ok() && h.ok());
  // full_shard: 2 boundary ranks each send (2·root+3·blocks)·3/4 elements; hybrid: 4 ranks
  // all-reduce their half-model shard across 2 replicas, Ψ/2 each: 2Ψ in all against ~7.5Ψ/2.
  EXPECT_LT(h->sent_cross_node, f->sent_cross_node);
  EXPECT_EQ(shard::RingTrafficPerStepAllRanks(*layout, full, kWorld, {})->sent_cross_node, 0);
}

TEST_F(TrafficByLinkTest, TheoryRejectsBadArguments) {
  auto layout = model::ModelLayout::Create(Config());
  ASSERT_TRUE(layout.ok());
  shard::ShardOptions hybrid;
  hybrid.strategy = Strategy::kHybridShard;
  hybrid.hybrid_group_size = 3;
  EXPECT_FALSE(shard::RingTrafficPerStep(*layout, hybrid, 4, {}, 0).ok());
  EXPECT_FALSE(shard::RingTrafficPerStep(*layout, {}, 4, {0, 1}, 0).ok());
  EXPECT_FALSE(shard::RingTrafficPerStep(*layout, {}, 4, {}, 4).ok());
}

}  // namespace
}  // namespace accel::testing
