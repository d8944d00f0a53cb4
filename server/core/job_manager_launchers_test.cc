// JobManager with launchers that place ranks on other machines (slurm, kubernetes): such jobs
// skip acceld's slot pools, their launch carries the gang's shape, shared environment and token,
// the cluster's name for each attempt is kept, a queued gang runs no registration deadline, and
// a restarted acceld stops what the cluster still runs of the old attempt.
#include <string>
#include <vector>

#include "server/core/job_manager.h"
#include "server/core/job_manager_test_fixture.h"

namespace accel::server {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::FakeRunner;
using testing::JobManagerTest;

class JobManagerLaunchersTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    slurm_.cluster = "slurm";
    manager_->AddLauncher("slurm", &slurm_);
  }
  JobRecord SlurmJob(int ranks, int nodes) {
    JobRecord j = Job(ranks, /*max_restarts=*/1);
    j.knobs.launcher = "slurm";
    j.knobs.nodes = nodes;
    j.knobs.launcher_settings = {{"partition", "gpu"}};
    return j;
  }
  FakeRunner slurm_;
};

TEST_F(JobManagerLaunchersTest, AClusterJobSkipsTheSlotPoolsAndCarriesItsShape) {
  // 8 ranks on 2 nodes: more than acceld's 3 CPU slots, which a cluster job does not use.
  auto job = manager_->Submit(SlurmJob(8, 2));
  ASSERT_TRUE(job.ok()) << job.status();
  manager_->Tick();
  ASSERT_EQ(slurm_.launches.size(), 1u);
  EXPECT_TRUE(runner_->launches.empty());
  const GangLaunch& g = slurm_.launches[0];
  EXPECT_EQ(g.shape.nodes, 2);
  EXPECT_EQ(g.shape.ranks_per_node, 4);
  EXPECT_EQ(g.shape.device, "cpu");
  EXPECT_EQ(g.worker_argv, std::vector<std::string>{"/opt/accel-worker"});
  EXPECT_EQ(g.token, "tok1");
  EXPECT_EQ(g.log_dir, "/logs/" + job->id + "/attempt-1");
  EXPECT_EQ(g.settings.at("partition"), "gpu");
  EXPECT_THAT(g.shared_env, Contains("ACCEL_COORDINATOR=127.0.0.1:7070"));
  EXPECT_THAT(g.shared_env, Contains("ACCEL_NODES=2"));
  EXPECT_THAT(g.shared_env, Contains("ACCEL_RANKS_PER_NODE=4"));
  EXPECT_THAT(g.shared_env, Contains("ACCEL_ATTEMPT=1"));
  // Nothing rank-specific, no token, nothing of acceld's own environment.
  for (const std::string& kv : g.shared_env) {
    for (const char* key : {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "MASTER_ADDR=",
                            "ACCEL_WORKER_TOKEN=", "PATH="}) {
      EXPECT_NE(kv.rfind(key, 0), 0u) << kv;
    }
  }
  // The CPU pool stays free for local jobs.
  EXPECT_EQ(manager_->Cluster().free_slots, 3);
  // The cluster's name for the attempt is kept and shown.
  EXPECT_EQ(registry_->Get(job->id)->placement, "slurm job 1");
  auto attempts = store_->ListAttempts(job->id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].placement, "slurm job 1");
}

TEST_F(JobManagerLaunchersTest, AFailedTaskRestartsTheAttemptThroughTheSameLauncher) {
  auto job = manager_->Submit(SlurmJob(2, 2));
  ASSERT_TRUE(job.ok());
  manager_->Tick();
  RegisterAll(job->id);
  slurm_.Exit(job->id, 1, 1, 0, SIGKILL);
  slurm_.Exit(job->id, 1, 0, 0, SIGTERM);
  manager_->Tick();  // both exits: the attempt fails, the job restarts as attempt 2
  manager_->Tick();
  ASSERT_EQ(slurm_.launches.size(), 2u);
  EXPECT_EQ(slurm_.launches[1].attempt, 2);
  EXPECT_EQ(registry_->Get(job->id)->placement, "slurm job 2");
  auto attempts = store_->ListAttempts(job->id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].placement, "slurm job 1");  // the ending keeps the name
  EXPECT_THAT((*attempts)[0].outcome, HasSubstr("rank 1 killed by signal 9"));
}

TEST_F(JobManagerLaunchersTest, AGangQueuedInTheClusterRunsNoRegistrationDeadline) {
  auto job = manager_->Submit(SlurmJob(2, 1));
  ASSERT_TRUE(job.ok());
  slurm_.pending = true;
  manager_->Tick();
  clock_.Advance(600 * 1000000LL);  // far past the 30 s heartbeat timeout, still queued
  manager_->Tick();
  EXPECT_THAT(slurm_.stops, IsEmpty());
  slurm_.pending = false;  // started: the deadline runs from now
  manager_->Tick();
  clock_.Advance(31 * 1000000LL);
  manager_->Tick();
  EXPECT_THAT(slurm_.stops, Contains(job->id + "/1"));
}

TEST_F(JobManagerLaunchersTest, ALauncherThisAcceldLacksIsRefusedAtSubmit) {
  JobRecord k8s = SlurmJob(2, 2);
  k8s.knobs.launcher = "kubernetes";
  auto refused = manager_->Submit(k8s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("resources.launcher: this acceld has no kubernetes launcher"));
  // Settings the launcher could never start the job with are refused at submit too.
  slurm_.settings_error = absl::InvalidArgumentError("resources.slurm.partition: unknown");
  refused = manager_->Submit(SlurmJob(2, 2));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("resources.slurm.partition"));
  EXPECT_TRUE(registry_->List().empty());
}

TEST_F(JobManagerLaunchersTest, ARestartedAcceldStopsWhatTheClusterStillRunsOfTheOldAttempt) {
  auto job = manager_->Submit(SlurmJob(2, 2));
  ASSERT_TRUE(job.ok());
  manager_->Tick();
  RegisterAll(job->id);
  // acceld is killed: a new one opens the same state. Its slurm launcher is told to forget the
  // old Slurm job, and the job runs again as attempt 2.
  FakeRunner slurm2;
  slurm2.cluster = "slurm";
  manager_.reset();
  registry_.reset();
  log_.reset();
  store_ = *StateStore::Open(path_);
  log_ = std::make_unique<EventLog>(store_.get(), &clock_);
  registry_ = *JobRegistry::Load(store_.get(), log_.get(), &clock_);
  ManagerOptions o;
  o.total_slots = 3;
  o.worker_bin = "/opt/accel-worker";
  manager_ = std::make_unique<JobManager>(o, registry_.get(), log_.get(), store_.get(),
                                          runner_.get(), &clock_);
  manager_->AddLauncher("slurm", &slurm2);
  ASSERT_TRUE(manager_->Recover().ok());
  EXPECT_THAT(slurm2.forgotten, Contains("slurm job 1"));
  manager_->Tick();
  ASSERT_EQ(slurm2.launches.size(), 1u);
  EXPECT_EQ(slurm2.launches[0].attempt, 2);
}

}  // namespace
}  // namespace accel::server
