// The loss mask through the sharding engine (docs/data.md "Loss mask"): with a mask beside the
// data, a step's loss and gradients are those of the mean over every target that counts, on
// every rank and micro-batch. So every strategy, world size {1,2,3,4}, accumulation {1,4} and
// offload mode reaches the losses and parameters of one rank processing the same global batch
// (fp32: 1e-5 relative), and at one world size the non-hybrid strategies and offload give the
// same bits as no_shard. The mask gives micro-batches (and ranks) different counts, some none,
// so a per-micro-batch or per-rank mean would not match.
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

class MaskedLossTest : public GangTest, public ::testing::WithParamInterface<std::string> {
 protected:
  MaskedLossTest() : GangTest(SmallModel(GetParam(), "masked")) {}
  void SetUp() override {
    GangTest::SetUp();
    absl::StatusOr<std::string> path = WriteGangMaskedData(dir_);
    ASSERT_TRUE(path.ok()) << path.status();
    masked_data_ = *path;
  }
  train::TrainOptions Options(Strategy s, int accum, int64_t batch,
                              DType dtype = DType::kF32) const {
    train::TrainOptions o = GangOptions(dir_, s, accum, batch, dtype);
    o.data = masked_data_;
    return o;
  }
  static void ExpectClose(const GangResult& got, const GangResult& want, const std::string& what) {
    ASSERT_EQ(got.losses.size(), want.losses.size());
    for (size_t i = 0; i < got.losses.size(); ++i) {
      EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * std::fabs(want.losses[i])) << what;
      ASSERT_TRUE(got.steps[i].loss_targets.has_value()) << what;
      EXPECT_EQ(got.steps[i].loss_targets, want.steps[i].loss_targets) << what;
    }
    double scale = 0, worst = 0;
    for (size_t i = 0; i < want.params.size(); ++i) {
      scale = std::max(scale, double(std::fabs(want.params[i])));
      worst = std::max(worst, double(std::fabs(got.params[i] - want.params[i])));
    }
    EXPECT_LE(worst, 1e-5 * scale) << what;
  }
  std::string masked_data_;
};

TEST_P(MaskedLossTest, TheMaskChangesTheLossAndCountsTargets) {
  auto masked = RunGang(Options(Strategy::kNoShard, 2, 2), 2);
  train::TrainOptions plain_options = Options(Strategy::kNoShard, 2, 2);
  plain_options.data = dir_ + "/data.txt";
  auto plain = RunGang(plain_options, 2);
  ASSERT_TRUE(masked.ok() && plain.ok()) << masked.status() << plain.status();
  EXPECT_NE(masked->losses, plain->losses);
  EXPECT_NE(masked->params, plain->params);
  const int64_t all = 2 * 2 * 8 * 2;  // accum · B · T · world
  for (const train::StepMetrics& m : masked->steps) {
    ASSERT_TRUE(m.loss_targets.has_value());
    EXPECT_GT(*m.loss_targets, 0);
    EXPECT_LT(*m.loss_targets, all);
    EXPECT_EQ(m.tokens, all);  // tokens/s counts every token
  }
  for (const train::StepMetrics& m : plain->steps) EXPECT_FALSE(m.loss_targets.has_value());
}

TEST_P(MaskedLossTest, EveryStrategyAndWorldMatchesOneRank) {
  for (int accum : {1, 4}) {
    for (int world : {1, 2, 3, 4}) {
      const std::string where = absl::StrCat("world ", world, " accum ", accum);
      auto reference = RunGang(Options(Strategy::kNoShard, accum, 2 * world), 1);
      auto no_shard = RunGang(Options(Strategy::kNoShard, accum, 2), world);
      ASSERT_TRUE(reference.ok() && no_shard.ok()) << reference.status() << no_shard.status();
      ExpectClose(*no_shard, *reference, "no_shard " + where);
      for (Strategy s : {Strategy::kShardOptimizer, Strategy::kShardGradOp, Strategy::kFullShard}) {
        auto run = RunGang(Options(s, accum, 2), world);
        ASSERT_TRUE(run.ok()) << run.status();
        EXPECT_EQ(run->params, no_shard->params) << shard::StrategyName(s) << " " << where;
        EXPECT_EQ(run->losses, no_shard->losses) << shard::StrategyName(s) << " " << where;
      }
    }
  }
  for (Strategy s : {Strategy::kHybridShard, Strategy::kHybridShardZero2}) {
    for (int accum : {1, 4}) {
      auto reference = RunGang(Options(Strategy::kNoShard, accum, 8), 1);
      auto run = RunGang(Options(s, accum, 2), 4);
      ASSERT_TRUE(reference.ok() && run.ok()) << run.status();
      ExpectClose(*run, *reference, absl::StrCat(std::string(shard::StrategyName(s)), " accum ", accum));
    }
  }
}

TEST_P(MaskedLossTest, OffloadGivesTheSameBits) {
  ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/nvme").ok());
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kShardGradOp,
                     Strategy::kFullShard}) {
    const std::string what(shard::StrategyName(s));
    auto plain = RunGang(Options(s, 2, 2), 2);
    train::TrainOptions cpu = Options(s, 2, 2);
    cpu.shard.offload_optimizer = true;
    auto offloaded = RunGang(cpu, 2);
    ASSERT_TRUE(plain.ok() && offloaded.ok()) << what << plain.status() << offloaded.status();
    EXPECT_EQ(plain->losses, offloaded->losses) << what;
    EXPECT_EQ(plain->params, offloaded->params) << what;
  }
  auto plain = RunGang(Options(Strategy::kFullShard, 2, 2), 2);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (bool nvme : {false, true}) {
    train::TrainOptions o = Options(Strategy::kFullShard, 2, 2);
    o.shard.offload_optimizer = o.shard.offload_params = true;
    if (nvme) o.shard.offload_dir = dir_ + "/nvme";
    auto run = RunGang(o, 2);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->losses, plain->losses) << "params offload, nvme " << nvme;
    EXPECT_EQ(run->params, plain->params) << "params offload, nvme " << nvme;
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, MaskedLossTest, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace accel::testing
