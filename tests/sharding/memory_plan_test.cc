// The memory plan (engine/plan/memory_plan.h) against real training: every strategy, fp32 and
// bf16 mixed precision, with and without optimizer offload and activation checkpointing, on 1
// and 2 ranks (and hybrid on 4), over real gloo. Each rank's ledger peaks — setup included,
// since nothing resets them — are taken from the last step's rank statistics and must EQUAL the
// plan's, category by category: the plan replays the engine's buffers with the plan's sizes, so
// any difference is a change in the engine the plan has not followed (no tolerance).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/config/planned_run.h"
#include "engine/model/param_specs.h"
#include "engine/plan/memory_plan.h"
#include "engine/shard/shard_plan.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

std::string Name(Strategy s) { return std::string(shard::StrategyName(s)); }

class MemoryPlanTest : public GangTest {
 protected:
  // Four blocks (so the backward's gradient pipeline reaches its depth) of sizes that do not
  // divide evenly by 2 or 4 (so padding shows).
  MemoryPlanTest() : GangTest(model::Gpt2Config{"memplan", 4, 2, 14, 131, 16}) {}

  train::TrainOptions Options(Strategy s, DType dtype, bool offload, bool checkpointing,
                              int world) {
    train::TrainOptions o = GangOptions(dir_, s, /*accum=*/1, /*batch=*/2, dtype);
    o.steps = 2;
    o.rank_stats_every = 1;
    o.shard.offload_optimizer = offload;
    o.activation_checkpointing = checkpointing;
    o.shard.hybrid_group_size = world >= 4 ? 2 : 1;
    return o;
  }

  // Runs `o` on `world` ranks and compares every rank's ledger peaks with its plan.
  void ExpectPlanMatches(const train::TrainOptions& o, int world, const std::string& what) {
    absl::StatusOr<GangResult> run = RunGang(o, world);
    ASSERT_TRUE(run.ok()) << what << ": " << run.status();
    ASSERT_FALSE(run->steps.empty()) << what;
    const std::vector<train::RankStats>& ranks = run->steps.back().ranks;
    ASSERT_EQ(ranks.size(), static_cast<size_t>(world)) << what;
    for (int r = 0; r < world; ++r) {
      // The kernel's view rides along (engine/base/process_memory.h): the peak resident set.
      EXPECT_GT(ranks[r].peak_rss, 0) << what;
      EXPECT_NE(ranks[r].ToJson().find("\"process\":{\"peak_rss\":" +
                                       std::to_string(ranks[r].peak_rss)),
                std::string::npos)
          << ranks[r].ToJson();
      accel::plan::MemoryPlanOptions po;
      po.world = world;
      po.rank = r;
      absl::StatusOr<accel::plan::MemoryPlan> plan =
          accel::plan::PlanMemory(config(), config::PlannedRunOf(o), po);
      ASSERT_TRUE(plan.ok()) << what << ": " << plan.status();
      for (int p = 0; p < kNumMemoryPools; ++p) {
        for (int c = 0; c < kNumMemoryCategories; ++c) {
          const auto pool = static_cast<MemoryPool>(p);
          const auto category = static_cast<MemoryCategory>(c);
          EXPECT_EQ(plan->Peak(pool, category), ranks[r].memory[p * kNumMemoryCategories + c].peak)
              << what << " rank " << r << ": " << MemoryPoolName(pool) << "/"
              << MemoryCategoryName(category);
        }
      }
    }
  }
};

TEST_F(MemoryPlanTest, EqualsTheLedgerPeaksForEveryStrategyDtypeOffloadAndCheckpointing) {
  const Strategy strategies[] = {Strategy::kNoShard, Strategy::kShardOptimizer,
                                 Strategy::kShardGradOp, Strategy::kFullShard,
                                 Strategy::kHybridShard};
  for (int world : {1, 2}) {
    for (Strategy s : strategies) {
      for (DType dtype : {DType::kF32, DType::kBF16}) {
        for (bool offload : {false, true}) {
          for (bool checkpointing : {false, true}) {
            ExpectPlanMatches(Options(s, dtype, offload, checkpointing, world), world,
                              absl::StrCat(Name(s), " ", std::string(DTypeName(dtype)),
                                           offload ? " offload" : "",
                                           checkpointing ? " checkpointing" : "", " N=", world));
          }
        }
      }
    }
  }
}

TEST_F(MemoryPlanTest, EqualsTheLedgerPeaksForHybridAccumulationAndParameterOffload) {
  // Hybrid with two replicas of two-rank groups.
  ExpectPlanMatches(Options(Strategy::kHybridShard, DType::kBF16, false, false, 4), 4,
                    "hybrid_shard bf16 N=4");
  ExpectPlanMatches(Options(Strategy::kHybridShardZero2, DType::kF32, true, false, 4), 4,
                    "hybrid_shard_zero2 fp32 offload N=4");
  // Gradient accumulation keeps the unreduced gradients between micro-steps.
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardGradOp, Strategy::kFullShard}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      train::TrainOptions o = Options(s, dtype, false, false, 2);
      o.grad_accum = 2;
      ExpectPlanMatches(o, 2, absl::StrCat(Name(s), " ", std::string(DTypeName(dtype)),
                                           " accum 2 N=2"));
    }
  }
  // Five micro-steps: the plan replays only until a micro-step leaves its state as it found it
  // (memory_replay.h); the real run's peaks after all five must still be the plan's.
  for (Strategy s : {Strategy::kNoShard, Strategy::kFullShard}) {
    train::TrainOptions o = Options(s, DType::kBF16, true, false, 2);
    o.grad_accum = 5;
    o.shard.reduce_every_micro_step = s == Strategy::kFullShard;
    ExpectPlanMatches(o, 2, absl::StrCat(Name(s), " bf16 offload accum 5 N=2"));
  }
  // Parameter offload to the host, and both to NVMe files.
  for (int world : {1, 2}) {
    train::TrainOptions o = Options(Strategy::kFullShard, DType::kBF16, true, true, world);
    o.shard.offload_params = true;
    ExpectPlanMatches(o, world, absl::StrCat("full_shard bf16 offload_params N=", world));
    o.shard.offload_dir = dir_;
    ExpectPlanMatches(o, world, absl::StrCat("full_shard bf16 nvme N=", world));
  }
}

// Issue 32: the parameters offloaded alone (DeepSpeed's offload_param without
// offload_optimizer), to the host or to files, and offloaded apart from the optimizer's state
// (their own NVMe directory; cpu parameters beside an nvme optimizer; nvme parameters beside a
// cpu one). The shards are counted where they live, the optimizer state on the rank.
TEST_F(MemoryPlanTest, EqualsTheLedgerPeaksForParameterOffloadApartFromTheOptimizer) {
  const std::string params_dir = dir_ + "/params", optimizer_dir = dir_ + "/optimizer";
  ASSERT_TRUE(Env::Default()->CreateDirs(params_dir).ok());
  ASSERT_TRUE(Env::Default()->CreateDirs(optimizer_dir).ok());
  struct Case {
    const char* name;
    bool optimizer;
    std::string param_dir, optimizer_dir;
    bool to_host;
  };
  const Case cases[] = {{"params alone on host", false, "", "", false},
                        {"params alone in files", false, params_dir, "", false},
                        {"two directories", true, params_dir, optimizer_dir, false},
                        {"host params, nvme optimizer", true, "", optimizer_dir, true},
                        {"nvme params, host optimizer", true, params_dir, "", false}};
  for (int world : {1, 2}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (const Case& c : cases) {
        train::TrainOptions o = Options(Strategy::kFullShard, dtype, c.optimizer, false, world);
        o.shard.offload_params = true;
        o.shard.offload_param_dir = c.param_dir;
        o.shard.offload_dir = c.optimizer_dir;
        o.shard.offload_params_to_host = c.to_host;
        const std::string what =
            absl::StrCat(c.name, " ", std::string(DTypeName(dtype)), " N=", world);
        ExpectPlanMatches(o, world, what);
        // The plan's own figure: the parameter shards, and nothing else of the parameters,
        // where they live.
        accel::plan::MemoryPlanOptions po;
        po.world = world;
        absl::StatusOr<accel::plan::MemoryPlan> plan =
            accel::plan::PlanMemory(config(), config::PlannedRunOf(o), po);
        ASSERT_TRUE(plan.ok()) << what << plan.status();
        absl::StatusOr<model::ModelLayout> layout = model::ModelLayout::Create(config());
        ASSERT_TRUE(layout.ok());
        absl::StatusOr<shard::ShardPlan> shards =
            shard::ShardPlan::Create(*layout, world, 0, o.shard);
        ASSERT_TRUE(shards.ok());
        int64_t shard_bytes = 0;
        for (int u = 0; u < shards->num_units(); ++u) {
          shard_bytes += shards->unit(u).shard_numel * DTypeSize(dtype);
        }
        const MemoryPool home = c.param_dir.empty() ? MemoryPool::kHost : MemoryPool::kNvme;
        EXPECT_EQ(plan->Peak(home, MemoryCategory::kParams), shard_bytes) << what;
        if (!c.optimizer) {
          EXPECT_EQ(plan->Peak(MemoryPool::kHost, MemoryCategory::kOptimizerState), 0) << what;
          EXPECT_EQ(plan->Peak(MemoryPool::kNvme, MemoryCategory::kOptimizerState), 0) << what;
        }
      }
    }
  }
}

// Issue 28: grad_accum or micro_batch 2e9 kept the planner (and the worker that runs it before
// anything else) busy for minutes, replaying every micro-step. Its cost is now independent of
// both: the plan returns at once (ctest's timeout is the guard), accumulation's peaks are those
// of a few micro-steps, and the micro-batch only scales the activations.
TEST_F(MemoryPlanTest, HugeAccumulationOrMicroBatchIsPlannedAtOnce) {
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardGradOp, Strategy::kFullShard}) {
    for (bool offload : {false, true}) {
      train::TrainOptions o = Options(s, DType::kBF16, offload, false, 2);
      o.grad_accum = 6;
      accel::plan::MemoryPlanOptions po;
      po.world = 2;
      absl::StatusOr<accel::plan::MemoryPlan> few =
          accel::plan::PlanMemory(config(), config::PlannedRunOf(o), po);
      ASSERT_TRUE(few.ok()) << few.status();
      o.grad_accum = 2000000000;
      absl::StatusOr<accel::plan::MemoryPlan> huge =
          accel::plan::PlanMemory(config(), config::PlannedRunOf(o), po);
      ASSERT_TRUE(huge.ok()) << huge.status();
      EXPECT_EQ(huge->peak, few->peak) << Name(s) << (offload ? " offload" : "");
      EXPECT_EQ(huge->pool_peak, few->pool_peak) << Name(s);
    }
  }
  train::TrainOptions o = Options(Strategy::kFullShard, DType::kF32, false, false, 1);
  absl::StatusOr<accel::plan::MemoryPlan> small =
      accel::plan::PlanMemory(config(), config::PlannedRunOf(o), {});
  ASSERT_TRUE(small.ok()) << small.status();
  o.batch = 2000000000;
  absl::StatusOr<accel::plan::MemoryPlan> huge =
      accel::plan::PlanMemory(config(), config::PlannedRunOf(o), {});
  ASSERT_TRUE(huge.ok()) << huge.status();
  const int64_t activations = huge->Peak(MemoryPool::kDevice, MemoryCategory::kActivations);
  // Micro-batch 2 → 2e9: the activations grow about 1e9-fold.
  EXPECT_GT(activations,
            small->Peak(MemoryPool::kDevice, MemoryCategory::kActivations) * 100000000);
  EXPECT_EQ(huge->Peak(MemoryPool::kDevice, MemoryCategory::kParams),
            small->Peak(MemoryPool::kDevice, MemoryCategory::kParams));
}

}  // namespace
}  // namespace accel::testing
