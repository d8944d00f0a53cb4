// A checkpoint directory belongs to one job: acceld refuses a second job on it at submit
// (checkpoint_dirs.h), and gives its workers the state id that makes their owner unique.
#include "server/core/checkpoint_dirs.h"

#include "engine/checkpoint/dir_owner.h"
#include "engine/testing/mem_env.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_fixture.h"

namespace accel::server {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using testing::JobManagerTest;

JobRecord Live(const std::string& id, JobState state, const std::string& dir) {
  JobRecord j;
  j.id = id;
  j.state = state;
  j.knobs.checkpoint_dir = dir;
  return j;
}

TEST(CheckpointDirsTest, ALiveJobsDirectoryIsRefusedHoweverItIsSpelled) {
  accel::testing::MemEnv env;
  const std::vector<JobRecord> jobs = {Live("job-1", JobState::kSucceeded, "/c"),
                                       Live("job-7", JobState::kRestarting, "/c/")};
  for (const char* dir : {"/c", "/c/", "/c/./", "/x/../c"}) {
    absl::Status s = CheckCheckpointDirFree(&env, dir, jobs, "aa");
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << dir;
    EXPECT_EQ(s.message(), absl::StrCat("checkpoint.dir ", dir, " is used by job job-7 "
                                        "(RESTARTING); give another directory or cancel it"));
  }
  EXPECT_TRUE(CheckCheckpointDirFree(&env, "/c2", jobs, "aa").ok());
  EXPECT_TRUE(CheckCheckpointDirFree(&env, "", jobs, "aa").ok());
}

TEST(CheckpointDirsTest, ADirectoryWithAnOwnerIsRefusedNamingIt) {
  accel::testing::MemEnv env;
  const std::vector<JobRecord> jobs = {Live("job-3", JobState::kCancelled, "/c")};
  auto refusal = [&](const checkpoint::CheckpointOwner& owner) {
    EXPECT_TRUE(env.DeleteRecursively("/c").ok() || !env.FileExists("/c"));
    EXPECT_TRUE(checkpoint::ClaimDir(&env, "/c", owner).ok());
    absl::Status s = CheckCheckpointDirFree(&env, "/c", jobs, "aa");
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    return std::string(s.message());
  };
  EXPECT_EQ(refusal({"job-3", "acceld:aa"}),
            "checkpoint.dir /c holds the checkpoints of job job-3 (CANCELLED) (its owner.json); "
            "a new job does not take them over: give another directory, or remove /c if they "
            "are no longer needed");
  EXPECT_THAT(refusal({"job-2", "acceld:aa"}), HasSubstr("of job job-2 (deleted)"));
  EXPECT_THAT(refusal({"job-3", "acceld:bb"}), HasSubstr("of job job-3 (acceld:bb)"));
  EXPECT_THAT(refusal({"standalone", "standalone:1234"}),
              HasSubstr("of job standalone (standalone:1234)"));
  // A corrupt owner file is refused too (DataLoss naming it), never taken for no owner.
  ASSERT_TRUE(WriteFileAtomic(&env, "/c/owner.json", "{").ok());
  absl::Status s = CheckCheckpointDirFree(&env, "/c", jobs, "aa");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("checkpoint.dir /c: /c/owner.json: not a JSON object"));
}

TEST_F(JobManagerTest, ASecondJobOnACheckpointDirIsRefusedAtSubmit) {
  const std::string dir = DirName(path_) + "/ckpt";  // beside the state database
  auto with_dir = [&](const std::string& d) {
    JobRecord j = Job(1);
    j.knobs.checkpoint_dir = d;
    return j;
  };
  auto first = manager_->Submit(with_dir(dir));
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = manager_->Submit(with_dir(dir + "/"));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.status().message(),
            absl::StrCat("checkpoint.dir ", dir, "/ is used by job job-1 (QUEUED); give another "
                         "directory or cancel it"));
  EXPECT_EQ(registry_->List().size(), 1u);  // nothing stored
  EXPECT_TRUE(manager_->Submit(Job(1)).ok());  // a job without a directory is not concerned

  // The workers' owner is (job id, acceld:<state id>).
  manager_->Tick();
  ASSERT_FALSE(runner_->launches.empty());
  EXPECT_EQ(runner_->launches[0].job_id, "job-1");
  const std::string state_id = *store_->StateId();
  EXPECT_EQ(state_id.size(), 16u);
  EXPECT_THAT(runner_->launches[0].ranks[0].env, Contains("ACCEL_STATE_ID=" + state_id));

  // job-1 saved (its rank 0 claimed the directory) and was cancelled: the directory holds its
  // checkpoints, which no new job takes over — nor once job-1 is deleted, nor after acceld
  // restarts (the state id stays).
  ASSERT_TRUE(checkpoint::ClaimDir(Env::Default(), dir, {"job-1", "acceld:" + state_id}).ok());
  runner_->on_stop_exit = {0};
  ASSERT_TRUE(manager_->Cancel("job-1").ok());
  manager_->Tick();
  ASSERT_EQ(State("job-1"), JobState::kCancelled);
  EXPECT_EQ(manager_->Submit(with_dir(dir)).status().message(),
            absl::StrCat("checkpoint.dir ", dir, " holds the checkpoints of job job-1 (CANCELLED) "
                         "(its owner.json); a new job does not take them over: give another "
                         "directory, or remove ", dir, " if they are no longer needed"));
  ASSERT_TRUE(manager_->Delete("job-1").ok());
  EXPECT_THAT(std::string(manager_->Submit(with_dir(dir)).status().message()),
              HasSubstr("of job job-1 (deleted)"));
  Open(/*slots=*/3);
  EXPECT_EQ(*store_->StateId(), state_id);
  EXPECT_THAT(std::string(manager_->Submit(with_dir(dir)).status().message()),
              HasSubstr("of job job-1 (deleted)"));
}

}  // namespace
}  // namespace accel::server
