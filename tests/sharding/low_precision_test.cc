// FSDP's low precision over real gloo TCP on 127.0.0.1 (ranks as threads), DESIGN.md §3.2's
// first row: weights loaded in bf16 and no mixed precision, so parameters, gradients, the
// reduction and AdamW's moments are all bf16 and there is no fp32 master
// (ShardOptions::master_dtype bf16).
//  - at one world size every non-hybrid strategy is bit-identical to no_shard;
//  - against one rank on the same global batch, the N-rank parameters are no further from it
//    than low precision itself is from fp32 (the criterion of mixed_precision_test.cc);
//  - model state per rank is 8Ψ divided as each stage divides it (2 params + 2 grads + 4
//    moments bytes per element), with no master anywhere;
//  - a run saved and resumed continues bit-identically (rank files hold the bf16 values
//    widened to fp32, exactly).
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

class LowPrecisionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    kernels::SetNumThreads(1);
    dir_ = new std::string(::testing::TempDir() + "/low_" + std::to_string(::getpid()));
    ASSERT_TRUE(WriteGangInputs(*dir_, model::Gpt2Config{"low", 2, 4, 20, 256, 16}).ok());
  }
  static void TearDownTestSuite() {
    (void)Env::Default()->DeleteRecursively(*dir_);
    delete dir_;
  }

  // Low precision unless `fp32`.
  static train::TrainOptions Options(Strategy s, int accum, int64_t batch, bool fp32 = false) {
    train::TrainOptions o = GangOptions(*dir_, s, accum, batch, fp32 ? DType::kF32 : DType::kBF16);
    if (!fp32) o.shard.master_dtype = DType::kBF16;
    return o;
  }

  static std::string* dir_;
};
std::string* LowPrecisionTest::dir_ = nullptr;

TEST_F(LowPrecisionTest, EveryStrategyMatchesOneRankAndNoShardBitForBit) {
  for (int accum : {1, 4}) {
    for (int world : {2, 3}) {
      const std::string where =
          "world " + std::to_string(world) + " accum " + std::to_string(accum);
      auto reference = RunGang(Options(Strategy::kNoShard, accum, 2 * world), 1);
      auto fp32 = RunGang(Options(Strategy::kNoShard, accum, 2 * world, true), 1);
      auto no_shard = RunGang(Options(Strategy::kNoShard, accum, 2), world);
      ASSERT_TRUE(reference.ok() && fp32.ok() && no_shard.ok()) << no_shard.status();
      for (size_t i = 0; i < no_shard->losses.size(); ++i) {
        EXPECT_NEAR(no_shard->losses[i], reference->losses[i], 1e-2 * reference->losses[i])
            << where;
      }
      const double precision = L2Distance(fp32->params, reference->params);
      EXPECT_GT(precision, 0) << where << ": low precision made no difference";
      EXPECT_LE(L2Distance(no_shard->params, reference->params), precision) << where;
      for (Strategy s : {Strategy::kShardOptimizer, Strategy::kShardGradOp, Strategy::kFullShard}) {
        auto run = RunGang(Options(s, accum, 2), world);
        ASSERT_TRUE(run.ok()) << run.status();
        EXPECT_EQ(run->params, no_shard->params) << shard::StrategyName(s) << " " << where;
        EXPECT_EQ(run->losses, no_shard->losses) << shard::StrategyName(s) << " " << where;
      }
    }
  }
}

TEST_F(LowPrecisionTest, HybridMatchesOneRank) {
  auto reference = RunGang(Options(Strategy::kNoShard, 1, 8), 1);
  auto fp32 = RunGang(Options(Strategy::kNoShard, 1, 8, true), 1);
  ASSERT_TRUE(reference.ok() && fp32.ok());
  for (Strategy s : {Strategy::kHybridShard, Strategy::kHybridShardZero2}) {
    auto run = RunGang(Options(s, 1, 2), 4);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_LE(L2Distance(run->params, reference->params), L2Distance(fp32->params, reference->params))
        << shard::StrategyName(s);
  }
}

TEST_F(LowPrecisionTest, ModelStateIsEightBytesPerParameterWithoutMasters) {
  for (int world : {1, 2, 3, 4}) {
    for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kShardGradOp,
                       Strategy::kFullShard}) {
      train::TrainOptions o = Options(s, 1, 2);
      o.steps = 2;
      auto run = RunGang(o, world);
      ASSERT_TRUE(run.ok()) << run.status();
      // bf16 params (2), bf16 reduced gradients (2), bf16 moments (4): 8Ψ, where mixed
      // precision's fp32 master and moments make it 16Ψ.
      const double formula = ZeroModelStateBytes(s, static_cast<double>(run->num_params), world,
                                                 2, 2, 4);
      const double padding = 8.0 * static_cast<double>(run->total_padded - run->num_params);
      for (int r = 0; r < world; ++r) {
        EXPECT_NEAR(static_cast<double>(run->model_state_bytes[r]), formula,
                    0.02 * formula + padding)
            << shard::StrategyName(s) << " world " << world << " rank " << r;
      }
    }
  }
}

TEST_F(LowPrecisionTest, ReportsBf16MasterAndOptimizerState) {
  auto trainer = train::Trainer::Create(Options(Strategy::kFullShard, 1, 2));
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  EXPECT_TRUE((*trainer)->sharded().low_precision());
  EXPECT_EQ((*trainer)->sharded().DTypesJson(),
            R"({"params":"bf16","grads":"bf16","master":"bf16","optimizer":"bf16"})");
  // Low precision is bf16 only: fp16 weights without an fp32 master are refused by name.
  train::TrainOptions fp16 = Options(Strategy::kFullShard, 1, 2);
  fp16.shard.param_dtype = DType::kF16;
  auto refused = train::Trainer::Create(fp16);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("master_dtype bf16 needs param_dtype bf16"),
            std::string::npos)
      << refused.status();
}

TEST_F(LowPrecisionTest, ResumesBitIdentically) {
  for (Strategy s : {Strategy::kNoShard, Strategy::kFullShard}) {
    const std::string name(shard::StrategyName(s));
    train::TrainOptions whole = Options(s, 2, 2);
    whole.steps = 6;
    auto runs = RunStraightAndResumed(whole, 2, 3, *dir_ + "/resume_" + name);
    ASSERT_TRUE(runs.ok()) << runs.status();
    const GangResult& uninterrupted = runs->uninterrupted;
    const GangResult& resumed = runs->resumed;
    EXPECT_EQ(resumed.params, uninterrupted.params) << name;
    ASSERT_EQ(resumed.losses.size(), 3u) << name;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(resumed.losses[i], uninterrupted.losses[3 + i]) << name;
  }
}

}  // namespace
}  // namespace accel::testing
