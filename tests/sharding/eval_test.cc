// Evaluation during training (engine/train/evaluation.h) over real gloo (ranks as threads), for
// a GPT-2 and a Llama-family model:
//  - the eval loss of the same weights is the same (1e-6 relative) at world sizes 1-4 under
//    every strategy, with optimizer or parameter offload, and in bf16 against bf16;
//  - evaluations between steps match one rank training the same global batch (the weights
//    agree to 1e-5, so the loss does), and every non-hybrid strategy gives the same bits;
//  - evaluating changes nothing a step keeps: the losses and parameters of a run with
//    evaluations are bit-identical to one without, and neither the model state nor the compute
//    pool's peak grows;
//  - every rank reports the same evaluation.
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/base/env.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "gtest/gtest.h"
#include "tests/sharding/gang.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

// 384 + 1 tokens: every batch size used here (B = 2 per rank, 2·world for one rank, T = 8)
// divides 384, so each run evaluates on exactly the same tokens.
constexpr int kEvalTokens = 2 * 8 * 12 * 2 + 1;

class EvalTest : public GangTest, public ::testing::WithParamInterface<std::string> {
 protected:
  EvalTest() : GangTest(SmallModel(GetParam(), "eval")) {}
  void SetUp() override {
    GangTest::SetUp();
    // Held-out text of another pattern than the training data's.
    std::string text;
    for (int i = 0; i < kEvalTokens; ++i) text += static_cast<char>('a' + (i * 5 + i / 7) % 26);
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/eval.txt", text).ok());
  }
  train::TrainOptions Options(Strategy s, int64_t batch, DType dtype = DType::kF32) const {
    train::TrainOptions o = GangOptions(dir_, s, /*accum=*/1, batch, dtype);
    o.eval.data = dir_ + "/eval.txt";
    o.eval.at_start = true;
    o.eval.every_n_steps = 2;
    o.eval.at_end = true;
    return o;
  }
  // Every rank's evaluations are the same, at steps 0, 2, 4 and 5; returns rank 0's losses.
  static std::vector<double> EvalLosses(const GangResult& r, const std::string& what) {
    std::vector<double> losses;
    for (const train::EvalMetrics& e : r.evals[0]) losses.push_back(e.loss);
    EXPECT_EQ(r.evals[0].size(), 4u) << what;
    for (size_t rank = 1; rank < r.evals.size(); ++rank) {
      EXPECT_EQ(r.evals[rank].size(), r.evals[0].size()) << what;
      if (r.evals[rank].size() != r.evals[0].size()) continue;
      for (size_t i = 0; i < r.evals[0].size(); ++i) {
        EXPECT_EQ(r.evals[rank][i].loss, r.evals[0][i].loss) << what << " rank " << rank;
      }
    }
    const int64_t steps[] = {0, 2, 4, 5};
    for (size_t i = 0; i < r.evals[0].size() && i < 4; ++i) {
      const train::EvalMetrics& e = r.evals[0][i];
      EXPECT_EQ(e.step, steps[i]) << what;
      EXPECT_EQ(e.tokens, kEvalTokens - 1) << what;  // no mask: every target counts
      EXPECT_NEAR(e.perplexity, std::exp(e.loss), 1e-9 * e.perplexity) << what;
    }
    return losses;
  }
};

TEST_P(EvalTest, SameEvalLossAtEveryWorldSizeAndStrategy) {
  auto base = RunGang(Options(Strategy::kNoShard, 2), 1);
  ASSERT_TRUE(base.ok()) << base.status();
  const std::vector<double> want = EvalLosses(*base, "one rank");
  ASSERT_EQ(want.size(), 4u);
  EXPECT_GT(want[0], 0);
  EXPECT_LT(want.back(), want[0]);  // training on text lowers the loss on other text too
  for (int world : {1, 2, 3, 4}) {
    // The same weights everywhere at the start; later, one rank on the same global batch.
    auto reference = RunGang(Options(Strategy::kNoShard, 2 * world), 1);
    ASSERT_TRUE(reference.ok()) << reference.status();
    const std::vector<double> ref = EvalLosses(*reference, "reference");
    ASSERT_EQ(ref.size(), 4u);
    EXPECT_NEAR(ref[0], want[0], 1e-6 * want[0]) << "B=" << 2 * world;
    std::vector<Strategy> strategies = {Strategy::kNoShard, Strategy::kShardOptimizer,
                                        Strategy::kShardGradOp, Strategy::kFullShard};
    if (world % 2 == 0) {
      strategies.push_back(Strategy::kHybridShard);
      strategies.push_back(Strategy::kHybridShardZero2);
    }
    std::vector<double> no_shard;
    for (Strategy s : strategies) {
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " world ", world);
      auto run = RunGang(Options(s, 2), world);
      ASSERT_TRUE(run.ok()) << what << ": " << run.status();
      const std::vector<double> got = EvalLosses(*run, what);
      ASSERT_EQ(got.size(), 4u) << what;
      EXPECT_NEAR(got[0], want[0], 1e-6 * want[0]) << what << " (starting weights)";
      for (size_t i = 1; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], ref[i], 1e-5 * ref[i]) << what << " eval " << i;
      }
      if (s == Strategy::kNoShard) no_shard = got;
      if (s != Strategy::kHybridShard && s != Strategy::kHybridShardZero2) {
        EXPECT_EQ(got, no_shard) << what;
      }
    }
  }
}

TEST_P(EvalTest, SameEvalLossUnderOffloadAndInBf16) {
  auto base = RunGang(Options(Strategy::kNoShard, 2), 1);
  ASSERT_TRUE(base.ok()) << base.status();
  const double want = EvalLosses(*base, "one rank")[0];
  for (Strategy s : {Strategy::kShardGradOp, Strategy::kFullShard}) {
    for (bool params : {false, true}) {
      if (params && s != Strategy::kFullShard) continue;
      train::TrainOptions o = Options(s, 2);
      o.shard.offload_optimizer = true;
      o.shard.offload_params = params;
      const std::string what = absl::StrCat(std::string(shard::StrategyName(s)),
                                            params ? " offload params" : " offload optimizer");
      auto run = RunGang(o, 3);
      ASSERT_TRUE(run.ok()) << what << ": " << run.status();
      EXPECT_NEAR(EvalLosses(*run, what)[0], want, 1e-6 * want) << what;
    }
  }
  // bf16 computes another loss than fp32; every bf16 run computes the same one.
  auto bf16 = RunGang(Options(Strategy::kNoShard, 2, DType::kBF16), 1);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  const double want16 = EvalLosses(*bf16, "bf16 one rank")[0];
  EXPECT_NEAR(want16, want, 2e-2 * want);
  for (int world : {2, 4}) {
    auto run = RunGang(Options(Strategy::kFullShard, 2, DType::kBF16), world);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_NEAR(EvalLosses(*run, "bf16 full_shard")[0], want16, 1e-6 * want16) << world;
  }
}

TEST_P(EvalTest, EvaluatingChangesNothingAStepKeeps) {
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kFullShard}) {
    for (int world : {1, 3}) {
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " world ", world);
      train::TrainOptions without = Options(s, 2);
      without.eval = {};
      auto plain = RunGang(without, world);
      auto evaluated = RunGang(Options(s, 2), world);
      ASSERT_TRUE(plain.ok() && evaluated.ok()) << what;
      EXPECT_TRUE(plain->evals[0].empty());
      EXPECT_EQ(evaluated->evals[0].size(), 4u) << what;
      EXPECT_EQ(evaluated->losses, plain->losses) << what;
      EXPECT_EQ(evaluated->params, plain->params) << what;
      EXPECT_EQ(evaluated->model_state_bytes, plain->model_state_bytes) << what;
      EXPECT_EQ(evaluated->compute_peak_bytes, plain->compute_peak_bytes) << what;
    }
  }
}

TEST_P(EvalTest, MaxBatchesEvaluatesTheFirstBatches) {
  train::TrainOptions o = Options(Strategy::kFullShard, 2);
  o.steps = 0;
  o.eval.max_batches = 5;  // of 24: rank r of 3 takes batches r and r + 3
  auto run = RunGang(o, 3);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->evals[0].size(), 1u);
  EXPECT_EQ(run->evals[0][0].tokens, 5 * 2 * 8);
  EXPECT_EQ(run->evals[0][0].batches, 5);
  train::TrainOptions one = o;
  one.shard.strategy = Strategy::kNoShard;
  auto alone = RunGang(one, 1);
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_EQ(alone->evals[0].size(), 1u);
  EXPECT_NEAR(run->evals[0][0].loss, alone->evals[0][0].loss, 1e-6 * alone->evals[0][0].loss);
}

// The checkpoint of an evaluated step records its eval loss, and keep_best keeps the step with
// the lowest besides the newest (keep_last 1).
TEST_P(EvalTest, CheckpointsRecordTheirEvalLossAndKeepTheBest) {
  train::TrainOptions o = Options(Strategy::kFullShard, 2);
  o.steps = 8;
  o.schedule.base_lr = 5e-2f;  // large steps: the eval loss need not fall monotonically
  o.checkpoint_dir = dir_ + "/ckpt";
  o.checkpoint_every = 2;
  o.keep_last = 1;
  o.keep_best = 1;
  auto run = RunGang(o, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  std::map<int64_t, double> loss_at;
  for (const train::EvalMetrics& e : run->evals[0]) loss_at[e.step] = e.loss;
  ASSERT_EQ(loss_at.size(), 5u);  // steps 0, 2, 4, 6, 8
  int64_t best = 2;
  for (int64_t step : {4, 6, 8}) {
    if (loss_at[step] <= loss_at[best]) best = step;
  }
  std::set<std::string> want = {"latest", "owner.json", "step_8", absl::StrCat("step_", best)};
  auto names = Env::Default()->ListDir(o.checkpoint_dir);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(std::set<std::string>(names->begin(), names->end()), want);
  for (int64_t step : {best, int64_t{8}}) {
    auto meta = checkpoint::ReadMetadata(Env::Default(), checkpoint::StepDir(o.checkpoint_dir, step));
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(meta->eval_loss, loss_at[step]) << step;
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, EvalTest, ::testing::Values("gpt2", "llama"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace accel::testing
