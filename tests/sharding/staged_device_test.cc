// The GPU backend's code paths, on the CPU. Each rank's trainer computes through host ops that
// say they are a device (CreateHostDeviceOps(..., as_device = true)), so the sharded model
// stages its host values (loss and norm agreement, loading, gathering for saves) through
// blocks, the trainer's host-side collectives go through a StagedCommunicator, and checkpoint
// ranges are copied through host staging — exactly as on a CUDA device, minus the kernels. Over
// real gloo (ranks as threads), every result must be bit-identical to the plain host run.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

class StagedDeviceTest : public GangTest {
 protected:
  StagedDeviceTest() : GangTest(model::Gpt2Config{"staged", 2, 4, 20, 256, 16}) {}
};

void ExpectSameRun(const GangResult& host, const GangResult& device, const std::string& what) {
  EXPECT_EQ(host.losses, device.losses) << what;
  EXPECT_EQ(host.params, device.params) << what;
  EXPECT_EQ(host.model_state_bytes, device.model_state_bytes) << what;
}

TEST_F(StagedDeviceTest, EveryStrategyAndDtypeMatchesTheHostBitForBit) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kShardGradOp,
                       Strategy::kFullShard}) {
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " ", std::string(DTypeName(dtype)));
      train::TrainOptions o = GangOptions(dir_, s, /*accum=*/2, /*batch=*/2, dtype);
      o.shard.forward_prefetch = true;
      auto host = RunGang(o, 2);
      auto device = RunGang(o, 2, /*as_device=*/true);
      ASSERT_TRUE(host.ok() && device.ok()) << what << ": " << host.status() << device.status();
      ExpectSameRun(*host, *device, what);
    }
  }
  // FSDP low precision: bf16 parameters and moments, no masters (the params16 ranges).
  for (Strategy s : {Strategy::kNoShard, Strategy::kFullShard}) {
    train::TrainOptions o = GangOptions(dir_, s, 1, 2, DType::kBF16);
    o.shard.master_dtype = DType::kBF16;
    auto host = RunGang(o, 2);
    auto device = RunGang(o, 2, /*as_device=*/true);
    ASSERT_TRUE(host.ok() && device.ok()) << host.status() << device.status();
    ExpectSameRun(*host, *device, absl::StrCat("low precision ", std::string(shard::StrategyName(s))));
  }
  // Hybrid: two shard groups of two, the replicate group's all-reduce staged too.
  train::TrainOptions o = GangOptions(dir_, Strategy::kHybridShard, 1, 2, DType::kBF16);
  auto host = RunGang(o, 4);
  auto device = RunGang(o, 4, /*as_device=*/true);
  ASSERT_TRUE(host.ok() && device.ok()) << host.status() << device.status();
  ExpectSameRun(*host, *device, "hybrid_shard bf16");
}

TEST_F(StagedDeviceTest, RankStatisticsTravelThroughTheStagedWorld) {
  train::TrainOptions o = GangOptions(dir_, Strategy::kFullShard, 1, 2);
  o.rank_stats_every = 1;
  auto host = RunGang(o, 3);
  auto device = RunGang(o, 3, /*as_device=*/true);
  ASSERT_TRUE(host.ok() && device.ok()) << host.status() << device.status();
  ASSERT_EQ(device->steps.size(), host->steps.size());
  for (size_t s = 0; s < host->steps.size(); ++s) {
    ASSERT_EQ(device->steps[s].ranks.size(), 3u) << "step " << s;
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(device->steps[s].ranks[r].rank, r);
      EXPECT_EQ(device->steps[s].ranks[r].bytes_sent, host->steps[s].ranks[r].bytes_sent);
    }
  }
}

TEST_F(StagedDeviceTest, CheckpointsSavedAndResumedThroughStagingAreExact) {
  train::TrainOptions o = GangOptions(dir_, Strategy::kFullShard, 2, 2, DType::kBF16);
  o.steps = 6;
  o.state_dict_type = train::TrainOptions::StateDictType::kFull;
  auto runs = RunStraightAndResumed(o, 2, 3, dir_ + "/ckpt", /*as_device=*/true);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->resumed.params, runs->uninterrupted.params);
  ASSERT_EQ(runs->resumed.losses.size(), 3u);
  for (int s = 0; s < 3; ++s) EXPECT_EQ(runs->resumed.losses[s], runs->uninterrupted.losses[3 + s]);
  // What the "device" saved, a host run resumes bit for bit as well.
  train::TrainOptions on_host = o;
  on_host.resume_dir = dir_ + "/ckpt";
  auto host = RunGang(on_host, 2);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->params, runs->uninterrupted.params);
}

TEST_F(StagedDeviceTest, LowPrecisionCheckpointsRoundTripThroughStaging) {
  train::TrainOptions o = GangOptions(dir_, Strategy::kFullShard, 1, 2, DType::kBF16);
  o.shard.master_dtype = DType::kBF16;
  o.steps = 6;
  auto runs = RunStraightAndResumed(o, 2, 3, dir_ + "/ckpt", /*as_device=*/true);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->resumed.params, runs->uninterrupted.params);
}

TEST_F(StagedDeviceTest, InitialWeightsLoadThroughStagingInEveryMode) {
  // A weights file from a host run, then every loading mode on the "device".
  train::TrainOptions save = GangOptions(dir_, Strategy::kNoShard, 1, 2);
  save.steps = 2;
  {
    auto t = train::Trainer::Create(save);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE((*t)->Train(nullptr).ok());
    ASSERT_TRUE((*t)->SaveWeights(dir_ + "/init/model.safetensors").ok());
  }
  struct Mode {
    const char* name;
    bool sync, efficient, zero3;
  };
  for (const Mode& m : {Mode{"every rank reads", false, false, false},
                        Mode{"sync_module_states", true, false, false},
                        Mode{"cpu_ram_efficient_loading", true, true, false},
                        Mode{"zero3_init", false, false, true}}) {
    train::TrainOptions o = GangOptions(dir_, Strategy::kFullShard, 1, 2, DType::kBF16);
    o.steps = 2;
    o.init_weights = dir_ + "/init/model.safetensors";
    o.sync_module_states = m.sync;
    o.cpu_ram_efficient_loading = m.efficient;
    o.zero3_init = m.zero3;
    auto host = RunGang(o, 2);
    auto device = RunGang(o, 2, /*as_device=*/true);
    ASSERT_TRUE(host.ok() && device.ok()) << m.name << ": " << host.status() << device.status();
    EXPECT_EQ(host->losses, device->losses) << m.name;
    EXPECT_EQ(host->params, device->params) << m.name;
  }
}

}  // namespace
}  // namespace accel::testing
