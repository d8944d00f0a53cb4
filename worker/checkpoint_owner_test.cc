#include "worker/checkpoint_owner.h"

#include "engine/testing/mem_env.h"
#include "gtest/gtest.h"

namespace accel::worker {
namespace {

TEST(CheckpointOwnerTest, ADaemonWorkerSavesForItsJobOfItsAcceld) {
  EXPECT_EQ(DaemonCheckpointOwner("job-7", "00ff"),
            (checkpoint::CheckpointOwner{"job-7", "acceld:00ff"}));
  EXPECT_EQ(DaemonCheckpointOwner("job-7", "").daemon, "acceld");
}

TEST(CheckpointOwnerTest, AStandaloneRunIsFreshUnlessItContinuesAStandaloneRunInPlace) {
  accel::testing::MemEnv env;
  const checkpoint::CheckpointOwner earlier{"standalone", "standalone:1111"};
  ASSERT_TRUE(checkpoint::ClaimDir(&env, "/c", earlier).ok());
  auto owner = [&](const std::string& dir, const std::string& resume) {
    return *StandaloneCheckpointOwner(&env, dir, resume, "2222");
  };
  const checkpoint::CheckpointOwner fresh{"standalone", "standalone:2222"};
  EXPECT_EQ(owner("/c", ""), fresh);         // not resuming: a new run (which the trainer refuses)
  EXPECT_EQ(owner("/c", "/other"), fresh);   // resuming elsewhere
  EXPECT_EQ(owner("/c", "/c/"), earlier);    // continuing /c in place: the same run
  EXPECT_EQ(owner("/new", "/new"), fresh);   // nobody owns it yet
  // An acceld job's directory is not taken over by a standalone run.
  ASSERT_TRUE(checkpoint::ClaimDir(&env, "/j", {"job-3", "acceld:aa"}).ok());
  EXPECT_EQ(owner("/j", "/j"), fresh);
  EXPECT_EQ(RandomRunId().size(), 16u);
  EXPECT_NE(RandomRunId(), RandomRunId());
}

}  // namespace
}  // namespace accel::worker
