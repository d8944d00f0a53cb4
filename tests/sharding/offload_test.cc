// Offload to the host (ShardOptions::offload_optimizer, offload_params): over real gloo (ranks
// as threads), every strategy gives the same bits as without offload; the fp32 masters and
// AdamW moments (and with parameter offload the parameter shards) move from the compute
// ("device") pool to the host pool by exactly the ZeRO amounts; checkpoints resume exactly with
// and across offload; and the device code paths (host ops that say they are a device) agree.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/model/param_specs.h"
#include "engine/shard/shard_plan.h"
#include "engine/shard/tile_stream.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

// Every test for each architecture (SmallModel: GPT-2 and a Llama-family model).
class OffloadTest : public GangTest, public ::testing::WithParamInterface<std::string> {
 protected:
  OffloadTest() : GangTest(SmallModel(GetParam(), "offload")) {}
  train::TrainOptions Options(Strategy s, DType dtype, bool offload) {
    train::TrainOptions o = GangOptions(dir_, s, /*accum=*/2, /*batch=*/2, dtype);
    o.shard.offload_optimizer = offload;
    return o;
  }
};

constexpr Strategy kStrategies[] = {Strategy::kNoShard, Strategy::kShardOptimizer,
                                    Strategy::kShardGradOp, Strategy::kFullShard};

TEST_P(OffloadTest, SameBitsAsWithoutOffloadForEveryStrategyAndDtype) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (Strategy s : kStrategies) {
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " ", std::string(DTypeName(dtype)));
      auto plain = RunGang(Options(s, dtype, false), 2);
      auto offloaded = RunGang(Options(s, dtype, true), 2);
      ASSERT_TRUE(plain.ok() && offloaded.ok()) << what << plain.status() << offloaded.status();
      EXPECT_EQ(plain->losses, offloaded->losses) << what;
      EXPECT_EQ(plain->params, offloaded->params) << what;
    }
  }
  auto plain = RunGang(Options(Strategy::kHybridShard, DType::kBF16, false), 4);
  auto offloaded = RunGang(Options(Strategy::kHybridShard, DType::kBF16, true), 4);
  ASSERT_TRUE(plain.ok() && offloaded.ok()) << plain.status() << offloaded.status();
  EXPECT_EQ(plain->params, offloaded->params) << "hybrid_shard";
}

TEST_P(OffloadTest, MastersAndMomentsMoveToTheHostPool) {
  absl::StatusOr<model::ModelLayout> layout = model::ModelLayout::Create(config_);
  ASSERT_TRUE(layout.ok());
  const double psi = static_cast<double>(layout->num_params());
  for (int world : {1, 2, 3}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (Strategy s : kStrategies) {
        const std::string what = absl::StrCat(std::string(shard::StrategyName(s)), " ",
                                              std::string(DTypeName(dtype)), " N=", world);
        auto plain = RunGang(Options(s, dtype, false), world);
        auto offloaded = RunGang(Options(s, dtype, true), world);
        ASSERT_TRUE(plain.ok() && offloaded.ok()) << what;
        const bool sharded_state = s != Strategy::kNoShard;
        // Strategies that reduce per unit keep the reduced gradient shards with the optimizer
        // too: they leave the compute pool as soon as they are reduced.
        const bool per_unit = s == Strategy::kShardGradOp || s == Strategy::kFullShard;
        const double grad_bytes = per_unit ? (dtype == DType::kBF16 ? 2.0 : 4.0) : 0.0;
        // Host: fp32 master + two fp32 moments of this rank's optimizer range, 12 bytes per
        // element (+ the reduced gradients), padding included (the plan's padded size bounds it).
        const double expected_host = (12.0 + grad_bytes) * psi / (sharded_state ? world : 1);
        const double slack = (12.0 + grad_bytes) *
                             static_cast<double>(offloaded->total_padded - layout->num_params());
        for (int r = 0; r < world; ++r) {
          EXPECT_EQ(plain->host_model_state_bytes[r], 0) << what;
          const double host = static_cast<double>(offloaded->host_model_state_bytes[r]);
          EXPECT_GE(host, expected_host * 0.98) << what << " rank " << r;
          EXPECT_LE(host, expected_host * 1.02 + slack) << what << " rank " << r;
          // The compute pool loses what the host gained, except in fp32, where the masters
          // are new copies (without offload the optimizer updates the parameters in place).
          const int64_t moved = plain->model_state_bytes[r] - offloaded->model_state_bytes[r];
          if (dtype == DType::kBF16) {
            EXPECT_EQ(moved, offloaded->host_model_state_bytes[r]) << what << " rank " << r;
          } else {
            // The moments and gradients only (the masters cover the padded range, the moments
            // the valid part, so 4 of every 12 + grad_bytes host bytes are the masters up to
            // padding).
            const double masters_share = 4.0 / (12.0 + grad_bytes);
            EXPECT_NEAR(static_cast<double>(moved), host * (1 - masters_share), slack / 3.0 + 16)
                << what << " rank " << r;
          }
        }
      }
    }
  }
}

TEST_P(OffloadTest, CheckpointsResumeExactlyWithAndAcrossOffload) {
  train::TrainOptions o = Options(Strategy::kFullShard, DType::kBF16, true);
  o.steps = 6;
  auto runs = RunStraightAndResumed(o, 2, 3, dir_ + "/ckpt");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->resumed.params, runs->uninterrupted.params);
  // Saved with the optimizer offloaded, resumed without it (and the straight run without
  // offload is the same bits): rank files hold the same masters and moments either way.
  train::TrainOptions without = o;
  without.shard.offload_optimizer = false;
  without.resume_dir = dir_ + "/ckpt";
  without.steps = 6;
  auto resumed = RunGang(without, 2);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->params, runs->uninterrupted.params);
}

TEST_P(OffloadTest, TheDeviceCodePathsAgree) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (Strategy s : {Strategy::kNoShard, Strategy::kFullShard}) {
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " ", std::string(DTypeName(dtype)));
      auto host = RunGang(Options(s, dtype, true), 2);
      auto device = RunGang(Options(s, dtype, true), 2, /*as_device=*/true);
      ASSERT_TRUE(host.ok() && device.ok()) << what << host.status() << device.status();
      EXPECT_EQ(host->params, device->params) << what;
      // Reduced gradient shards join the offloaded state only when the rank computes in host
      // memory; a device keeps them beside its compute (docs/sharding.md, "NVMe offload").
      const int64_t reduced_on_host =
          s == Strategy::kFullShard ? host->total_padded / 2 * (dtype == DType::kBF16 ? 2 : 4)
                                    : 0;
      for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(host->host_model_state_bytes[r] - device->host_model_state_bytes[r],
                  reduced_on_host)
            << what << " rank " << r;
      }
    }
  }
}

TEST_P(OffloadTest, ParameterOffloadKeepsTheShardsOnTheHostWithTheSameBits) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (bool as_device : {false, true}) {
      const std::string what = absl::StrCat(std::string(DTypeName(dtype)),
                                            as_device ? " (device paths)" : "");
      train::TrainOptions o = Options(Strategy::kFullShard, dtype, true);
      o.shard.offload_params = true;
      o.shard.forward_prefetch = true;
      auto plain = RunGang(Options(Strategy::kFullShard, dtype, false), 2);
      auto offloaded = RunGang(o, 2, as_device);
      ASSERT_TRUE(plain.ok() && offloaded.ok()) << what << plain.status() << offloaded.status();
      EXPECT_EQ(plain->losses, offloaded->losses) << what;
      EXPECT_EQ(plain->params, offloaded->params) << what;
      // Between steps the compute pool holds no parameters at all, only the reduced gradients;
      // the host holds the shards besides the optimizer state.
      const int64_t param_bytes = static_cast<int64_t>(DTypeSize(dtype));
      for (int r = 0; r < 2; ++r) {
        const int64_t moved = plain->model_state_bytes[r] - offloaded->model_state_bytes[r];
        EXPECT_GT(offloaded->host_model_state_bytes[r], 0) << what;
        if (dtype == DType::kBF16) {
          EXPECT_EQ(moved, offloaded->host_model_state_bytes[r]) << what << " rank " << r;
        }
        EXPECT_GE(offloaded->host_model_state_bytes[r],
                  (12 + param_bytes) * (offloaded->num_params / 2))
            << what << " rank " << r;
      }
    }
  }
  // Hybrid sharding offloads its in-group shards the same way.
  train::TrainOptions h = Options(Strategy::kHybridShard, DType::kBF16, true);
  h.shard.offload_params = true;
  auto plain = RunGang(Options(Strategy::kHybridShard, DType::kBF16, false), 4);
  auto offloaded = RunGang(h, 4);
  ASSERT_TRUE(plain.ok() && offloaded.ok()) << plain.status() << offloaded.status();
  EXPECT_EQ(plain->params, offloaded->params);
}

// Parameter offload without the optimizer's, and to a directory of its own: param_offload_test.
TEST_P(OffloadTest, ParameterOffloadNeedsShardedParameters) {
  train::TrainOptions zero2 = Options(Strategy::kShardGradOp, DType::kBF16, true);
  zero2.shard.offload_params = true;
  auto r = RunGang(zero2, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("offload_params needs a strategy that shards"),
            std::string::npos)
      << r.status();
}

TEST_P(OffloadTest, NvmeOffloadKeepsTheStateInFilesWithTheSameBits) {
  ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/nvme").ok());
  for (bool params : {false, true}) {
    train::TrainOptions host = Options(Strategy::kFullShard, DType::kBF16, true);
    host.shard.offload_params = params;
    train::TrainOptions nvme = host;
    nvme.shard.offload_dir = dir_ + "/nvme";
    auto in_memory = RunGang(host, 2);
    auto in_files = RunGang(nvme, 2);
    ASSERT_TRUE(in_memory.ok() && in_files.ok()) << in_memory.status() << in_files.status();
    EXPECT_EQ(in_memory->losses, in_files->losses) << params;
    EXPECT_EQ(in_memory->params, in_files->params) << params;
    absl::StatusOr<model::ModelLayout> layout = model::ModelLayout::Create(config_);
    ASSERT_TRUE(layout.ok());
    for (int r = 0; r < 2; ++r) {
      // Between steps the host pool holds no model state but the update's two staging tiles
      // (shard::TileStream): the rest is in the nvme pool, with the fp32 gradient copies,
      // which are files kept across steps (in host memory they come and go within the step).
      absl::StatusOr<shard::ShardPlan> plan = shard::ShardPlan::Create(*layout, 2, r, nvme.shard);
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_EQ(in_files->host_model_state_bytes[r],
                shard::TileStream::BufferBytes(shard::OptimizerStreamOptions(*plan)))
          << params << " rank " << r;
      EXPECT_EQ(in_files->nvme_model_state_bytes[r],
                in_memory->host_model_state_bytes[r] + in_files->total_padded / 2 * 4)
          << params << " rank " << r;
      EXPECT_EQ(in_files->model_state_bytes[r], in_memory->model_state_bytes[r]);
    }
  }
  // Checkpoints of NVMe-offloaded state resume exactly.
  train::TrainOptions o = Options(Strategy::kFullShard, DType::kBF16, true);
  o.shard.offload_dir = dir_ + "/nvme";
  o.steps = 6;
  auto runs = RunStraightAndResumed(o, 2, 3, dir_ + "/ckpt");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->resumed.params, runs->uninterrupted.params);
}

// The streamed update (shard::TileStream, with the parameters written from the master tiles
// where they are offloaded too) gives the bits of the resident run for every strategy, hybrid
// on 4 ranks, in fp32 and bf16, over tiles smaller than the units.
TEST_P(OffloadTest, NvmeOffloadGivesTheResidentBitsForEveryStrategy) {
  ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/nvme").ok());
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kShardGradOp,
                       Strategy::kFullShard, Strategy::kHybridShard}) {
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " ", std::string(DTypeName(dtype)));
      const int world = s == Strategy::kHybridShard ? 4 : 2;
      train::TrainOptions nvme = Options(s, dtype, true);
      nvme.shard.offload_dir = dir_ + "/nvme";
      nvme.shard.offload_tile_numel = 2048;  // several tiles per unit
      nvme.shard.offload_params = s == Strategy::kFullShard || s == Strategy::kHybridShard;
      auto resident = RunGang(Options(s, dtype, false), world);
      auto in_files = RunGang(nvme, world);
      ASSERT_TRUE(resident.ok() && in_files.ok())
          << what << resident.status() << in_files.status();
      EXPECT_EQ(resident->losses, in_files->losses) << what;
      EXPECT_EQ(resident->params, in_files->params) << what;
    }
  }
}

TEST_P(OffloadTest, LowPrecisionHasNoMastersToOffload) {
  train::TrainOptions o = Options(Strategy::kFullShard, DType::kBF16, true);
  o.shard.master_dtype = DType::kBF16;
  auto r = RunGang(o, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("offload_optimizer"), std::string::npos) << r.status();
}

INSTANTIATE_TEST_SUITE_P(Architectures, OffloadTest,
                         ::testing::Values("gpt2", "llama", "qwen3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace accel::testing
