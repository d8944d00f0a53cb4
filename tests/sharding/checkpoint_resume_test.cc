// Sharded checkpoints through the trainer, over real gloo (ranks as threads):
//  - save at step k, resume, run to n: bit-identical to an uninterrupted n-step run (same world
//    and strategy), for every strategy;
//  - saved by 4 ranks full_shard, resumed by 2 ranks shard_grad_op and by 1 rank no_shard with
//    the same global batch: matches the uninterrupted run within the equivalence tolerance.
#include <algorithm>
#include <cmath>
#include <string>
#include <unistd.h>

#include "engine/kernels/threading.h"
#include "engine/model/gpt2_config.h"
#include "gtest/gtest.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "tests/sharding/gang.h"

namespace accel::testing {
namespace {

using shard::Strategy;

class CheckpointResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels::SetNumThreads(1);
    dir_ = ::testing::TempDir() + "/ckpt_resume_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    std::string text;
    for (int i = 0; i < 3000; ++i) text += static_cast<char>('a' + (i * 5 + i / 11) % 26);
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/data.txt", text).ok());
    model::Gpt2Config c{"ck", 2, 4, 20, 256, 16};
    ASSERT_TRUE(
        WriteFileAtomic(Env::Default(), dir_ + "/config.json", model::Gpt2ConfigToJson(c)).ok());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  train::TrainOptions Options(Strategy s, int64_t batch, int64_t steps) {
    train::TrainOptions o;
    o.model_config = dir_ + "/config.json";
    o.data = dir_ + "/data.txt";
    o.batch = batch;
    o.seq = 8;
    o.steps = steps;
    o.grad_accum = 2;
    o.schedule.kind = optim::ScheduleKind::kCosine;
    o.schedule.base_lr = 1e-2f;
    o.schedule.warmup_steps = 2;
    o.adamw.eps = 1e-6f;
    o.adamw.weight_decay = 0.1f;
    o.shard.strategy = s;
    return o;
  }
  std::string dir_;
};

TEST_F(CheckpointResumeTest, ResumeIsBitIdenticalForEveryStrategy) {
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kShardGradOp,
                     Strategy::kFullShard}) {
    const std::string name(shard::StrategyName(s));
    auto runs = RunStraightAndResumed(Options(s, 2, 6), 3, 3, dir_ + "/" + name);
    ASSERT_TRUE(runs.ok()) << runs.status();
    const GangResult& whole = runs->uninterrupted;
    const GangResult& resumed = runs->resumed;
    EXPECT_EQ(resumed.params, whole.params) << name;
    ASSERT_EQ(resumed.losses.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(resumed.losses[i], whole.losses[3 + i]) << name;
  }
}

TEST_F(CheckpointResumeTest, ResumesAtAnotherWorldSizeAndStrategy) {
  auto whole = RunGang(Options(Strategy::kFullShard, 2, 6), 4);
  ASSERT_TRUE(whole.ok()) << whole.status();
  train::TrainOptions save = Options(Strategy::kFullShard, 2, 3);
  save.checkpoint_dir = dir_ + "/w4";
  save.checkpoint_every = 3;
  ASSERT_TRUE(RunGang(save, 4).ok());
  // Same global batch (world x batch = 8) at 2 ranks and at 1.
  for (auto [world, strategy] : {std::pair{2, Strategy::kShardGradOp},
                                 std::pair{1, Strategy::kNoShard}}) {
    train::TrainOptions resume = Options(strategy, 8 / world, 6);
    resume.resume_dir = save.checkpoint_dir;
    auto run = RunGang(resume, world);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->losses.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(run->losses[i], whole->losses[3 + i], 1e-5 * whole->losses[3 + i]);
    }
    double scale = 0, worst = 0;
    for (size_t i = 0; i < whole->params.size(); ++i) {
      scale = std::max(scale, double(std::fabs(whole->params[i])));
      worst = std::max(worst, double(std::fabs(run->params[i] - whole->params[i])));
    }
    EXPECT_LE(worst, 1e-5 * scale) << "world " << world;
  }
}

TEST_F(CheckpointResumeTest, KeepLastPrunesOldSteps) {
  train::TrainOptions o = Options(Strategy::kShardGradOp, 2, 6);
  o.checkpoint_dir = dir_ + "/keep";
  o.checkpoint_every = 1;
  o.keep_last = 2;
  ASSERT_TRUE(RunGang(o, 2).ok());
  auto entries = Env::Default()->ListDir(o.checkpoint_dir);
  ASSERT_TRUE(entries.ok());
  int steps = 0;
  for (const std::string& e : *entries) steps += e.rfind("step_", 0) == 0 ? 1 : 0;
  EXPECT_EQ(steps, 2);
  auto latest = checkpoint::LatestStepDir(Env::Default(), o.checkpoint_dir);
  ASSERT_TRUE(latest.ok());
  EXPECT_NE(latest->find("step_"), std::string::npos);
}

// A checkpoint directory belongs to one job (engine/checkpoint/dir_owner.h): a second job's
// gang is refused on every rank before it trains a step, the first job's steps stay as they
// were, and the first job itself goes on resuming and pruning its own directory.
TEST_F(CheckpointResumeTest, AnotherJobsDirectoryIsRefusedBeforeTrainingAndLeftIntact) {
  train::TrainOptions job3 = Options(Strategy::kFullShard, 2, 4);
  job3.checkpoint_dir = dir_ + "/shared";
  job3.checkpoint_every = 2;
  job3.keep_last = 1;
  job3.checkpoint_owner = {"job-3", "acceld:00000000000000aa"};
  ASSERT_TRUE(RunGang(job3, 2).ok());
  train::TrainOptions job7 = job3;
  job7.checkpoint_owner = {"job-7", "acceld:00000000000000aa"};
  auto refused = RunGang(job7, 2);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find(
                "belongs to job job-3 (acceld:00000000000000aa) (owner.json); this is job job-7"),
            std::string::npos)
      << refused.status();
  auto names = [&] {
    std::vector<std::string> out = *Env::Default()->ListDir(job3.checkpoint_dir);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(names(), (std::vector<std::string>{"latest", "owner.json", "step_4"}));
  // job-3 restarted: resumes from its own directory and prunes its own steps, as before.
  job3.resume_dir = job3.checkpoint_dir;
  job3.steps = 6;
  auto resumed = RunGang(job3, 2);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->losses.size(), 2u);
  EXPECT_EQ(names(), (std::vector<std::string>{"latest", "owner.json", "step_6"}));
  EXPECT_EQ(checkpoint::ReadMetadata(Env::Default(), job3.checkpoint_dir + "/step_6")->owner,
            job3.checkpoint_owner);
}

}  // namespace
}  // namespace accel::testing
