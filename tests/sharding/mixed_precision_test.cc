// Mixed precision over real gloo TCP on 127.0.0.1 (ranks as threads), DESIGN.md §3.2:
//  - bf16 mixed (bf16 params and reduction, fp32 masters): every strategy x world {1,2,3,4} x
//    accumulation {1,4} matches one rank processing the same global batch in bf16 mixed, within
//    the tolerance below, and at one world size every non-hybrid strategy is bit-identical to
//    no_shard (same chunks, same roundings);
//  - fp16 with dynamic loss scaling skips overflowing steps, lowers the scale, then trains.
// The bf16 memory formulas and bytes on the wire are checked with fp32's, in
// shard_equivalence_test.cc.
//
// Tolerance (docs/sharding.md, "Mixed precision"): N ranks reduce N bf16-rounded partial
// gradients (fp32 accumulation, one rounding of the sum) where one rank rounds one fp32 sum, so
// gradients differ by about one bf16 ulp (2^-8 relative), and AdamW turns the sign of a
// near-zero gradient into a full ±lr update — element-wise bounds say little. The criterion is
// relative to bf16 itself: the L2 distance between the N-rank and the one-rank bf16 parameters
// must not exceed the distance between the one-rank bf16 and fp32 parameters (what choosing
// bf16 costs in the first place). Measured: 0 to 0.58 of that distance. Losses: within 1e-2
// relative (the bound).
#include <unistd.h>

#include <cmath>
#include <string>

#include "engine/kernels/threading.h"
#include "engine/model/gpt2_config.h"
#include "gtest/gtest.h"
#include "tests/sharding/gang.h"

namespace accel::testing {
namespace {

using shard::Strategy;

// Every test for each architecture (SmallModel: GPT-2 and a Llama-family model).
class MixedPrecisionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    kernels::SetNumThreads(1);
    dir_ = ::testing::TempDir() + "/mixed_" + std::to_string(::getpid()) + "_" + GetParam();
    ASSERT_TRUE(WriteGangInputs(dir_, SmallModel(GetParam(), "mixed")).ok());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  train::TrainOptions Options(Strategy s, int accum, int64_t batch,
                              DType dtype = DType::kBF16) const {
    return GangOptions(dir_, s, accum, batch, dtype);
  }

  // `got` (bf16, N ranks) against `want` (bf16, one rank) and `fp32` (fp32, one rank).
  static void ExpectWithinBf16Tolerance(const GangResult& got, const GangResult& want,
                                        const GangResult& fp32, const std::string& what) {
    ASSERT_EQ(got.losses.size(), want.losses.size());
    for (size_t i = 0; i < got.losses.size(); ++i) {
      EXPECT_NEAR(got.losses[i], want.losses[i], 1e-2 * std::fabs(want.losses[i])) << what;
    }
    ASSERT_EQ(got.params.size(), want.params.size());
    const double sharding = L2Distance(got.params, want.params);
    const double precision = L2Distance(fp32.params, want.params);
    EXPECT_GT(precision, 0) << what << ": bf16 made no difference at all";
    EXPECT_LE(sharding, precision) << what;
  }

  std::string dir_;
};

TEST_P(MixedPrecisionTest, Bf16EveryStrategyMatchesOneRankAndNoShardBitForBit) {
  for (int accum : {1, 4}) {
    for (int world : {1, 2, 3, 4}) {
      auto reference = RunGang(Options(Strategy::kNoShard, accum, 2 * world), 1);
      auto fp32 = RunGang(Options(Strategy::kNoShard, accum, 2 * world, DType::kF32), 1);
      ASSERT_TRUE(reference.ok() && fp32.ok()) << reference.status() << fp32.status();
      auto no_shard = RunGang(Options(Strategy::kNoShard, accum, 2), world);
      ASSERT_TRUE(no_shard.ok()) << no_shard.status();
      const std::string where =
          "world " + std::to_string(world) + " accum " + std::to_string(accum);
      ExpectWithinBf16Tolerance(*no_shard, *reference, *fp32, "no_shard " + where);
      for (Strategy s : {Strategy::kShardOptimizer, Strategy::kShardGradOp, Strategy::kFullShard}) {
        auto run = RunGang(Options(s, accum, 2), world);
        ASSERT_TRUE(run.ok()) << run.status();
        EXPECT_EQ(run->params, no_shard->params) << shard::StrategyName(s) << " " << where;
        EXPECT_EQ(run->losses, no_shard->losses) << shard::StrategyName(s) << " " << where;
      }
    }
  }
}

TEST_P(MixedPrecisionTest, Bf16IsInEffectAndCloseToFp32) {
  auto fp32 = RunGang(Options(Strategy::kFullShard, 1, 2, DType::kF32), 2);
  auto bf16 = RunGang(Options(Strategy::kFullShard, 1, 2, DType::kBF16), 2);
  ASSERT_TRUE(fp32.ok() && bf16.ok());
  // Rounded parameters change the forward: the losses differ, but only by bf16's precision.
  EXPECT_NE(bf16->losses, fp32->losses);
  EXPECT_NE(bf16->params, fp32->params);
  for (size_t i = 0; i < fp32->losses.size(); ++i) {
    EXPECT_NEAR(bf16->losses[i], fp32->losses[i], 1e-2 * fp32->losses[i]);
  }
}

TEST_P(MixedPrecisionTest, HybridBf16MatchesOneRank) {
  for (Strategy s : {Strategy::kHybridShard, Strategy::kHybridShardZero2}) {
    for (int accum : {1, 4}) {
      auto reference = RunGang(Options(Strategy::kNoShard, accum, 8), 1);
      auto fp32 = RunGang(Options(Strategy::kNoShard, accum, 8, DType::kF32), 1);
      auto run = RunGang(Options(s, accum, 2), 4);
      ASSERT_TRUE(reference.ok() && fp32.ok() && run.ok()) << run.status();
      ExpectWithinBf16Tolerance(*run, *reference, *fp32, std::string(shard::StrategyName(s)));
    }
  }
}

TEST_P(MixedPrecisionTest, Fp16SkipsOverflowingStepsAndLowersTheScale) {
  train::TrainOptions o = Options(Strategy::kFullShard, 1, 2, DType::kF16);
  o.steps = 10;
  // 2^22 times this model's gradients overflows fp16 (max 65504): the first steps must be
  // skipped, each halving the scale (hysteresis 1), until the gradients fit.
  o.loss_scaling = {/*initial_scale_power=*/22, /*window=*/1000, /*hysteresis=*/1,
                    /*min_scale=*/1};
  o.schedule.kind = optim::ScheduleKind::kLinear;
  o.schedule.warmup_steps = 4;
  auto run = RunGang(o, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->steps.size(), 10u);
  EXPECT_TRUE(run->steps[0].skipped);
  double expected_scale = std::ldexp(1.0, 22);
  int taken = 0;
  optim::LrSchedule schedule = o.schedule;
  schedule.total_steps = o.steps;
  for (const train::StepMetrics& m : run->steps) {
    EXPECT_EQ(m.loss_scale, expected_scale) << "step " << m.step;
    // Skipped steps do not advance the LR schedule (Accelerate's scheduler wrapper and
    // DeepSpeed's engine skip it too): the schedule's position is the applied-step count.
    EXPECT_FLOAT_EQ(m.lr, schedule.LrAt(taken)) << "step " << m.step;
    if (m.skipped) {
      expected_scale /= 2;
    } else {
      ++taken;
      EXPECT_TRUE(std::isfinite(m.grad_norm));
    }
  }
  EXPECT_GT(taken, 0) << "the scale never came down far enough to train";
  EXPECT_FALSE(run->steps.back().skipped);
  for (float v : run->params) ASSERT_TRUE(std::isfinite(v));
  // Every strategy takes the same decisions and ends bit-identical.
  train::TrainOptions n = o;
  n.shard.strategy = Strategy::kNoShard;
  auto no_shard = RunGang(n, 2);
  ASSERT_TRUE(no_shard.ok());
  EXPECT_EQ(no_shard->params, run->params);
  EXPECT_EQ(no_shard->losses, run->losses);
}

TEST_P(MixedPrecisionTest, StepRecordsCarryEveryRanksMemoryDTypesAndTraffic) {
  train::TrainOptions o = Options(Strategy::kFullShard, 1, 2);
  o.steps = 3;
  o.rank_stats_every = 2;  // steps 2 and 3 (the last) carry records
  auto run = RunGang(o, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->steps.size(), 3u);
  EXPECT_TRUE(run->steps[0].ranks.empty());
  for (int i : {1, 2}) {
    const train::StepMetrics& m = run->steps[i];
    ASSERT_EQ(m.ranks.size(), 2u) << "step " << i;
    for (int r = 0; r < 2; ++r) {
      const train::RankStats& s = m.ranks[r];
      EXPECT_EQ(s.rank, r);
      // Between steps a full_shard rank holds its bf16 shard of every unit.
      const MemoryCounts params =
          s.memory[static_cast<int>(MemoryPool::kDevice) * kNumMemoryCategories +
                   static_cast<int>(MemoryCategory::kParams)];
      EXPECT_EQ(params.current, 2 * run->total_padded / 2) << "rank " << r;
      EXPECT_GT(params.peak, params.current);  // units were gathered during the step
      EXPECT_GT(s.bytes_sent, 0);
      EXPECT_GT(s.bytes_received, 0);
    }
    const std::string json = train::StepMetricsToJson(m);
    EXPECT_NE(json.find("\"ranks\":[{\"rank\":0,\"memory\":{\"compute\""), std::string::npos)
        << json;
  }
  // The second record covers one step, the first two: bytes follow.
  EXPECT_NEAR(double(run->steps[1].ranks[0].bytes_sent),
              2.0 * double(run->steps[2].ranks[0].bytes_sent),
              0.02 * double(run->steps[1].ranks[0].bytes_sent));
}

// A checkpoint holds the fp32 masters and, under fp16, the loss scaler: resuming continues
// bit-identically, the skipped-step schedule included.
TEST_P(MixedPrecisionTest, Bf16AndFp16ResumeBitIdentically) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    for (Strategy s : {Strategy::kShardGradOp, Strategy::kFullShard}) {
      const std::string name =
          std::string(DTypeName(dtype)) + "_" + std::string(shard::StrategyName(s));
      train::TrainOptions whole = Options(s, 2, 2, dtype);
      whole.steps = 6;
      whole.loss_scaling = {/*initial_scale_power=*/20, /*window=*/2, /*hysteresis=*/2,
                            /*min_scale=*/1};
      auto runs = RunStraightAndResumed(whole, 2, 3, dir_ + "/resume_" + name);
      ASSERT_TRUE(runs.ok()) << runs.status();
      const GangResult& uninterrupted = runs->uninterrupted;
      const GangResult& resumed = runs->resumed;
      EXPECT_EQ(resumed.params, uninterrupted.params) << name;
      ASSERT_EQ(resumed.steps.size(), 3u) << name;
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(resumed.losses[i], uninterrupted.losses[3 + i]) << name;
        EXPECT_EQ(resumed.steps[i].loss_scale, uninterrupted.steps[3 + i].loss_scale) << name;
        EXPECT_EQ(resumed.steps[i].skipped, uninterrupted.steps[3 + i].skipped) << name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, MixedPrecisionTest,
                         ::testing::Values("gpt2", "llama", "qwen3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace accel::testing
