// A checkpoint directory belongs to one job: the owner file, the refusal of a second owner,
// pruning that never touches another owner's steps, and pruning by rename first.
#include "engine/checkpoint/dir_owner.h"

#include <string>

#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/inspect.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using namespace ::accel::checkpoint::testing;  // NOLINT: the helpers of this test family
using ::accel::testing::FaultEnv;
using ::accel::testing::FaultOp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kDir[] = "/ckpt";
const CheckpointOwner kJob3{"job-3", "acceld:00000000000000aa"};
const CheckpointOwner kJob7{"job-7", "acceld:00000000000000aa"};
const CheckpointOwner kOtherAcceldJob3{"job-3", "acceld:00000000000000bb"};

class DirOwnerTest : public ::testing::Test {
 protected:
  absl::Status Save(Env* env, int64_t step, int keep_last, const CheckpointOwner& owner) {
    return SaveAs(env, kDir, layout_, State(layout_.num_params(), step), step, 2, keep_last,
                  owner);
  }
  accel::testing::MemEnv env_;
  model::ModelLayout layout_ = SmallLayout();
};

TEST_F(DirOwnerTest, OwnerFileRoundTripsAndRefusesCorruption) {
  const std::string text = OwnerToJson(kJob7);
  EXPECT_THAT(text, HasSubstr(R"("format":"accel-checkpoint-owner","format_version":1)"));
  auto back = OwnerFromJson(text, "/d/owner.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, kJob7);
  std::string flipped = text;
  flipped[flipped.find("job-7") + 4] = '8';
  EXPECT_EQ(OwnerFromJson(flipped, "/d/owner.json").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(OwnerFromJson(flipped, "/d/owner.json").status().message(),
              HasSubstr("/d/owner.json: checksum mismatch"));
  EXPECT_THAT(OwnerFromJson("{}", "/d/owner.json").status().message(),
              HasSubstr("field \"format\" is missing"));
  EXPECT_EQ(*ReadOwner(&env_, "/nowhere"), std::nullopt);
}

TEST_F(DirOwnerTest, TheFirstSaveRecordsTheOwnerAndEveryStepNamesIt) {
  ASSERT_TRUE(Save(&env_, 1, 0, kJob7).ok());
  EXPECT_EQ(**ReadOwner(&env_, kDir), kJob7);
  EXPECT_EQ(ReadMetadata(&env_, StepDir(kDir, 1))->owner, kJob7);
  // The same job again (a restart, acceld restarted, a new attempt): as before.
  ASSERT_TRUE(Save(&env_, 2, 0, kJob7).ok());
  EXPECT_TRUE(ClaimDir(&env_, kDir, kJob7).ok());
  EXPECT_EQ(*LatestStepDir(&env_, kDir), StepDir(kDir, 2));
}

TEST_F(DirOwnerTest, ASecondOwnerIsRefusedBeforeAnythingChanges) {
  for (int step = 1; step <= 3; ++step) ASSERT_TRUE(Save(&env_, step, 2, kJob3).ok());
  for (const CheckpointOwner& other : {kJob7, kOtherAcceldJob3, CheckpointOwner{}}) {
    absl::Status claimed = ClaimDir(&env_, kDir, other);
    EXPECT_EQ(claimed.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(CheckOwner(&env_, kDir, other), claimed);
    // The commit refuses too, even when rank files were written without a claim.
    absl::Status committed = Save(&env_, 2, 1, other);
    EXPECT_EQ(committed.code(), absl::StatusCode::kFailedPrecondition) << committed;
  }
  EXPECT_THAT(std::string(ClaimDir(&env_, kDir, kJob7).message()),
              HasSubstr("checkpoint.dir /ckpt belongs to job job-3 (acceld:00000000000000aa) "
                        "(owner.json); this is job job-7 (acceld:00000000000000aa): give another "
                        "directory, or remove /ckpt"));
  // job-3's steps and `latest` are untouched (the refused saves left only step_2.tmp, which is
  // job-3's to clean up at its next save).
  EXPECT_EQ(*LatestStepDir(&env_, kDir), StepDir(kDir, 3));
  EXPECT_TRUE(*LoadAll(&env_, StepDir(kDir, 2), layout_) == State(layout_.num_params(), 2));
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_2", "step_2.tmp",
                                               "step_3"));
  ASSERT_TRUE(Save(&env_, 4, 2, kJob3).ok());
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_3", "step_4"));
}

TEST_F(DirOwnerTest, KeepLastNeverPrunesStepsAnotherOwnerWrote) {
  // job-3 saved steps 1..4 and ended; then its owner file went (removed by hand, or the
  // directory predates owner files) and job-7 took the directory.
  for (int step = 1; step <= 4; ++step) ASSERT_TRUE(Save(&env_, step, 0, kJob3).ok());
  ASSERT_TRUE(env_.DeleteFile(JoinPath(kDir, kOwnerFileName)).ok());
  for (int step = 5; step <= 7; ++step) ASSERT_TRUE(Save(&env_, step, 1, kJob7).ok());
  // job-7 keeps only its newest step; every one of job-3's stays.
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_1", "step_2",
                                               "step_3", "step_4", "step_7"));
  EXPECT_EQ(ReadMetadata(&env_, StepDir(kDir, 4))->owner, kJob3);
  // A run resumed from an earlier step drops its own abandoned future, not another owner's.
  ASSERT_TRUE(Save(&env_, 0, 1, kJob7).ok());
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_0", "step_1",
                                               "step_2", "step_3", "step_4"));
  // Saving a step number another owner holds is refused, and that step stays as it was.
  absl::Status replaced = Save(&env_, 4, 1, kJob7);
  EXPECT_EQ(replaced.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(replaced.message()),
              HasSubstr("/ckpt/step_4 was written by job job-3 (acceld:00000000000000aa)"));
  EXPECT_TRUE(*LoadAll(&env_, StepDir(kDir, 4), layout_) == State(layout_.num_params(), 4));
  EXPECT_EQ(*LatestStepDir(&env_, kDir), StepDir(kDir, 0));
}

TEST_F(DirOwnerTest, APruneStopsAfterTheRenameLeavingNoStepALoaderCanSee) {
  for (int step = 1; step <= 2; ++step) ASSERT_TRUE(Save(&env_, step, 2, kJob7).ok());
  // The delete after the rename fails (a cancel in the middle of a recursive delete is the
  // same to loaders): step_1's name is already gone.
  FaultEnv fault(&env_);
  fault.FailFrom(FaultOp::kDelete, 0);
  ASSERT_TRUE(Save(&fault, 3, 2, kJob7).ok());
  EXPECT_GT(fault.InjectedFailures(), 0);
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre(".trash-step_1", "latest", "owner.json",
                                               "step_2", "step_3"));
  EXPECT_EQ(*LatestStepDir(&env_, kDir), StepDir(kDir, 3));
  auto listed = InspectCheckpoints(&env_, kDir, /*verify=*/true);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->ok());
  ASSERT_EQ(listed->steps.size(), 2u);  // step_2 and step_3: the leftover is not a step
  EXPECT_EQ(listed->steps[0].name, "step_2");
  // The next save removes the leftover (and prunes as usual).
  fault.ClearFaults();
  ASSERT_TRUE(Save(&fault, 4, 2, kJob7).ok());
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_3", "step_4"));
}

}  // namespace
}  // namespace accel::checkpoint
