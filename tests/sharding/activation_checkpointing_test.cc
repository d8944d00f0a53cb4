// Per-block activation checkpointing (TrainOptions::activation_checkpointing) over real gloo
// (ranks as threads): every strategy, in fp32 and bf16, gives the same losses and parameter
// bits as keeping the activations, and each rank's ledger (what its memory events report)
// shows fewer activation bytes.
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

class ActivationCheckpointingTest : public GangTest {
 protected:
  // Four blocks: the stored block outputs are a small part of what the blocks keep otherwise.
  ActivationCheckpointingTest() : GangTest(model::Gpt2Config{"ac", 4, 4, 32, 256, 32}) {}
  train::TrainOptions Options(Strategy s, DType dtype, bool checkpoint) {
    train::TrainOptions o = GangOptions(dir_, s, /*accum=*/2, /*batch=*/2, dtype);
    o.activation_checkpointing = checkpoint;
    o.rank_stats_every = 1;
    return o;
  }
  static int64_t ActivationPeak(const GangResult& r, int rank) {
    const auto& m = r.steps.back().ranks.at(rank).memory;
    return m[static_cast<int>(MemoryPool::kDevice) * kNumMemoryCategories +
             static_cast<int>(MemoryCategory::kActivations)]
        .peak;
  }
};

TEST_F(ActivationCheckpointingTest, SameBitsForEveryStrategyAndLessActivationMemory) {
  struct Case {
    Strategy strategy;
    int world;
  };
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (Case c : {Case{Strategy::kNoShard, 2}, Case{Strategy::kShardOptimizer, 2},
                   Case{Strategy::kShardGradOp, 2}, Case{Strategy::kFullShard, 2},
                   Case{Strategy::kHybridShard, 4}}) {
      const std::string what = absl::StrCat(std::string(shard::StrategyName(c.strategy)), " ",
                                            std::string(DTypeName(dtype)));
      auto kept = RunGang(Options(c.strategy, dtype, false), c.world);
      auto recomputed = RunGang(Options(c.strategy, dtype, true), c.world);
      ASSERT_TRUE(kept.ok() && recomputed.ok()) << what << kept.status() << recomputed.status();
      EXPECT_EQ(kept->losses, recomputed->losses) << what;
      EXPECT_EQ(kept->params, recomputed->params) << what;
      for (int r = 0; r < c.world; ++r) {
        EXPECT_GT(ActivationPeak(*recomputed, r), 0) << what;
        EXPECT_LT(2 * ActivationPeak(*recomputed, r), ActivationPeak(*kept, r))
            << what << " rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace accel::testing
