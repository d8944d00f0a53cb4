// The fault matrix for a FULL_STATE_DICT save through the trainer (one rank, over MemEnv): a crash
// after every mutating call of the save of step 2 — with and without a power loss after it —
// leaves `latest` naming a complete step (1 or 2) whose model.safetensors verifies and loads to
// that step's parameters; a save that returned OK is durable; and the next save succeeds.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/kernels/threading.h"
#include "engine/model/gpt2_config.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/mem_env.h"
#include "engine/train/trainer.h"
#include "gtest/gtest.h"

namespace accel::testing {
namespace {

constexpr char kDir[] = "/ckpt";

class FullCheckpointCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels::SetNumThreads(1);
    auto layout = model::ModelLayout::Create(config_);
    ASSERT_TRUE(layout.ok());
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
  }

  // Inputs, then a trainer on `env` that has saved step 1 (durably) and trained step 2.
  absl::StatusOr<std::unique_ptr<train::Trainer>> Prepare(MemEnv* mem, Env* env) {
    std::string text;
    for (int i = 0; i < 2000; ++i) text += static_cast<char>('a' + (i * 3 + i / 7) % 26);
    ACCEL_RETURN_IF_ERROR(mem->CreateDirs("/in"));
    ACCEL_RETURN_IF_ERROR(WriteFileAtomic(mem, "/in/data.txt", text));
    ACCEL_RETURN_IF_ERROR(
        WriteFileAtomic(mem, "/in/config.json", model::Gpt2ConfigToJson(config_)));
    train::TrainOptions o;
    o.model_config = "/in/config.json";
    o.data = "/in/data.txt";
    o.batch = 2;
    o.seq = 8;
    o.steps = 2;
    o.schedule.base_lr = 1e-2f;
    o.state_dict_type = train::TrainOptions::StateDictType::kFull;
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> t,
                           train::Trainer::Create(o, {}, env, &ledger_));
    ACCEL_RETURN_IF_ERROR(t->TrainStep().status());
    ACCEL_RETURN_IF_ERROR(t->SaveCheckpoint(kDir, /*keep_last=*/1).status());
    ACCEL_ASSIGN_OR_RETURN(step1_params_, t->GatherParams());
    mem->SyncAll();
    ACCEL_RETURN_IF_ERROR(t->TrainStep().status());
    ACCEL_ASSIGN_OR_RETURN(step2_params_, t->GatherParams());
    return t;
  }

  // latest names a complete step whose model file verifies and holds that step's values.
  void ExpectLatestLoadable(Env* env, const std::string& where) {
    auto latest = checkpoint::LatestStepDir(env, kDir);
    ASSERT_TRUE(latest.ok()) << where << ": " << latest.status();
    auto meta = checkpoint::ReadMetadata(env, *latest);
    ASSERT_TRUE(meta.ok()) << where << ": " << meta.status();
    ASSERT_EQ(meta->model_files.size(), 1u) << where;
    absl::Status verified = checkpoint::VerifyModelFile(env, *latest, meta->model_files[0]);
    ASSERT_TRUE(verified.ok()) << where << ": " << verified;
    std::vector<float> params(layout_->num_params());
    ASSERT_TRUE(checkpoint::LoadHfWeights(env, *latest + "/model.safetensors", *layout_,
                                              params.data()).ok()) << where;
    const std::vector<float>& want = meta->step == 2 ? step2_params_ : step1_params_;
    ASSERT_TRUE(meta->step == 1 || meta->step == 2) << where;
    EXPECT_EQ(*latest, checkpoint::StepDir(kDir, meta->step)) << where;
    EXPECT_TRUE(params == want) << where << ": latest holds other values than step "
                                << meta->step;
  }

  model::Gpt2Config config_{"crash", 2, 2, 16, 128, 16};
  std::unique_ptr<model::ModelLayout> layout_;
  MemoryLedger ledger_;
  std::vector<float> step1_params_, step2_params_;
};

TEST_F(FullCheckpointCrashTest, ACrashAtEveryPointLeavesALoadableCheckpoint) {
  int64_t total = 0;
  {
    MemEnv mem;
    FaultEnv probe(&mem);
    auto t = Prepare(&mem, &probe);
    ASSERT_TRUE(t.ok()) << t.status();
    probe.ResetCounts();
    ASSERT_TRUE((*t)->SaveCheckpoint(kDir, 1).ok());
    total = probe.TotalCount();
    ASSERT_GT(total, 8);
  }
  for (int64_t n = 0; n <= total; ++n) {
    for (bool power_loss : {false, true}) {
      const std::string where = absl::StrCat("crash after ", n, " of ", total, " mutations",
                                             power_loss ? " + power loss" : "");
      MemEnv mem;
      FaultEnv env(&mem);
      auto t = Prepare(&mem, &env);
      ASSERT_TRUE(t.ok()) << t.status();
      env.ResetCounts();
      env.CrashAfterMutations(n);
      const absl::Status s = (*t)->SaveCheckpoint(kDir, 1).status();
      if (power_loss) mem.SimulatePowerLoss();
      ExpectLatestLoadable(&mem, where);
      if (s.ok()) {
        EXPECT_EQ(checkpoint::LatestStepDir(&mem, kDir).value(), checkpoint::StepDir(kDir, 2))
            << where;
      }
      // The process "restarts": the same save now succeeds and becomes latest.
      env.ClearFaults();
      ASSERT_TRUE((*t)->SaveCheckpoint(kDir, 1).ok()) << where;
      EXPECT_EQ(checkpoint::LatestStepDir(&mem, kDir).value(), checkpoint::StepDir(kDir, 2))
          << where;
      ExpectLatestLoadable(&mem, where + ", then saved again");
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace accel::testing
