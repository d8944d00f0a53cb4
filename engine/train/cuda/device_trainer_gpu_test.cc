// DeviceTrainer on a device (label gpu; skips without one): trains gpt2-tiny on repetitive text
// until the loss falls, agrees with the CPU Trainer on its first steps (fp32 and bf16 mixed
// precision), gives FULL_SHARD the NO_SHARD result on one device, saves a model file the CPU
// side reads, and — with two or more devices — trains a FULL_SHARD gang over NCCL that agrees
// with one rank on the same global batch.
#include <cmath>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/comm/in_memory_store.h"
#include "engine/tensor/cuda/device.h"
#include "engine/train/cuda/device_trainer.h"
#include "engine/shard/cuda/nccl_process_groups.h"
#include "engine/testing/spawn_ranks.h"
#include "engine/train/repetitive_text_test_fixture.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

class DeviceTrainerGpuTest : public RepetitiveTextTest {
 protected:
  void SetUp() override {
    if (cuda::ListDevices().empty()) GTEST_SKIP() << "no CUDA device";
    RepetitiveTextTest::SetUp();
  }
  TrainOptions Options(int64_t steps) {
    TrainOptions o = RepetitiveTextTest::Options();
    o.steps = steps;
    o.grad_accum = 2;
    o.adamw.weight_decay = 0.1f;
    return o;
  }
};

TEST_F(DeviceTrainerGpuTest, LossFallsOnRepetitiveText) {
  auto t = DeviceTrainer::Create(Options(40));
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<float> losses;
  ASSERT_TRUE((*t)->Train([&](const StepMetrics& m) {
    losses.push_back(m.loss);
    EXPECT_FALSE(m.skipped);
    EXPECT_GT(m.tokens_per_s, 0);
    return absl::OkStatus();
  }).ok());
  ASSERT_EQ(losses.size(), 40u);
  EXPECT_LT(losses.back(), 0.5f * losses.front()) << losses.front() << " -> " << losses.back();
  EXPECT_GT((*t)->ledger()->Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 0);
}

TEST_F(DeviceTrainerGpuTest, FirstStepsAgreeWithTheCpuTrainer) {
  auto gpu = DeviceTrainer::Create(Options(5));
  auto cpu = Trainer::Create(Options(5));
  ASSERT_TRUE(gpu.ok() && cpu.ok()) << gpu.status() << cpu.status();
  for (int s = 0; s < 5; ++s) {
    auto g = (*gpu)->TrainStep();
    auto c = (*cpu)->TrainStep();
    ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
    EXPECT_NEAR(g->loss, c->loss, 1e-3 * c->loss) << "step " << s;
    EXPECT_NEAR(g->grad_norm, c->grad_norm, 1e-3 * c->grad_norm) << "step " << s;
  }
  const std::string path = dir_ + "/final/model.safetensors";
  ASSERT_TRUE((*gpu)->SaveWeights(path).ok());
  auto reader = checkpoint::SafetensorsReader::Open(Env::Default(), path);
  ASSERT_TRUE(reader.ok()) << reader.status();
}

TEST_F(DeviceTrainerGpuTest, Bf16MixedPrecisionFollowsTheCpuTrainer) {
  TrainOptions o = Options(5);
  o.shard.param_dtype = o.shard.reduce_dtype = DType::kBF16;
  auto gpu = DeviceTrainer::Create(o);
  auto cpu = Trainer::Create(o);
  ASSERT_TRUE(gpu.ok() && cpu.ok()) << gpu.status() << cpu.status();
  EXPECT_EQ((*gpu)->sharded().DTypesJson(), (*cpu)->sharded().DTypesJson());
  for (int s = 0; s < 5; ++s) {
    auto g = (*gpu)->TrainStep();
    auto c = (*cpu)->TrainStep();
    ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
    // bf16 rounding on both sides, in different orders: the bf16 criterion of docs/sharding.md.
    EXPECT_NEAR(g->loss, c->loss, 1e-2 * c->loss) << "step " << s;
  }
}

TEST_F(DeviceTrainerGpuTest, FullShardGivesTheNoShardResultOnOneDevice) {
  TrainOptions plain = Options(6);
  TrainOptions sharded = plain;
  sharded.shard.strategy = shard::Strategy::kFullShard;
  sharded.shard.forward_prefetch = true;
  auto a = DeviceTrainer::Create(plain);
  auto b = DeviceTrainer::Create(sharded);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  for (int s = 0; s < 6; ++s) {
    auto x = (*a)->TrainStep();
    auto y = (*b)->TrainStep();
    ASSERT_TRUE(x.ok() && y.ok()) << x.status() << y.status();
    // One rank: the gathers are copies; only the device's atomics reorder sums.
    EXPECT_NEAR(x->loss, y->loss, 1e-5 * x->loss) << "step " << s;
    EXPECT_NEAR(x->grad_norm, y->grad_norm, 1e-4 * x->grad_norm) << "step " << s;
  }
}

TEST_F(DeviceTrainerGpuTest, TwoDeviceFullShardGangAgreesWithOneRank) {
  if (cuda::ListDevices().size() < 2) GTEST_SKIP() << "needs two CUDA devices";
  TrainOptions one = Options(4);
  one.batch = 8;  // the gang's global batch: 2 ranks x 4
  std::vector<float> reference;
  {
    auto t = DeviceTrainer::Create(one);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE((*t)->Train([&](const StepMetrics& m) {
      reference.push_back(m.loss);
      return absl::OkStatus();
    }).ok());
  }
  TrainOptions gang = Options(4);
  gang.shard.strategy = shard::Strategy::kFullShard;
  gang.shard.forward_prefetch = true;
  comm::InMemoryStore store;
  std::vector<std::vector<float>> losses(2);
  ASSERT_TRUE(testing::SpawnRanks(2, [&](int rank) -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(shard::OwnedProcessGroups groups,
                           shard::CreateNcclProcessGroups(&store, "gang", rank, 2, rank,
                                                          gang.shard));
    ACCEL_ASSIGN_OR_RETURN(auto t, DeviceTrainer::Create(gang, groups.view(), rank));
    return t->Train([&](const StepMetrics& m) {
      losses[rank].push_back(m.loss);
      return absl::OkStatus();
    });
  }).ok());
  ASSERT_EQ(losses[0].size(), reference.size());
  for (size_t s = 0; s < reference.size(); ++s) {
    EXPECT_EQ(losses[0][s], losses[1][s]) << "ranks agree on the mean loss, step " << s;
    // Not the same bits: one rank of batch 8 and two of batch 4 window the data alike but sum
    // in other orders (NCCL's, the atomics').
    EXPECT_NEAR(losses[0][s], reference[s], 1e-4 * reference[s]) << "step " << s;
  }
}

TEST_F(DeviceTrainerGpuTest, ResumesFromADeviceCheckpoint) {
  // Straight: 6 steps, saving at 3. Resumed: a new trainer from that checkpoint runs 4..6.
  TrainOptions o = Options(6);
  o.shard.strategy = shard::Strategy::kFullShard;
  o.shard.param_dtype = o.shard.reduce_dtype = DType::kBF16;
  o.checkpoint_dir = dir_ + "/ckpt";
  o.checkpoint_every = 3;
  std::vector<float> straight;
  {
    auto t = DeviceTrainer::Create(o);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE((*t)->trainer().Train([&](const StepMetrics& m) {
      straight.push_back(m.loss);
      return absl::OkStatus();
    }).ok());
  }
  TrainOptions r = o;
  r.checkpoint_dir.clear();
  r.resume_dir = dir_ + "/ckpt";  // latest is step 6: point it back at step 3
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/ckpt/latest", "step_3\n").ok());
  auto t = DeviceTrainer::Create(r);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->step(), 3);
  std::vector<float> resumed;
  ASSERT_TRUE((*t)->Train([&](const StepMetrics& m) {
    resumed.push_back(m.loss);
    return absl::OkStatus();
  }).ok());
  ASSERT_EQ(resumed.size(), 3u);
  // The device's atomics make two runs differ in the last bits, not more.
  for (int s = 0; s < 3; ++s) EXPECT_NEAR(resumed[s], straight[3 + s], 1e-4 * straight[3 + s]);
}

}  // namespace
}  // namespace accel::train
