// JobManager: gangs start, fail, restart, are cancelled, queue, resume after a restart of acceld
// and checkpoint on shutdown. Resources (GPU pools) and attempt fencing: job_manager_resources_test.cc.
#include "server/core/job_manager.h"

#include "server/core/job_manager_test_fixture.h"

namespace accel::server {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::FakeRunner;
using testing::JobManagerTest;

TEST_F(JobManagerTest, HappyPathStartsOneWorkerPerRankWithTorchrunEnv) {
  auto job = manager_->Submit(Job(2));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(State(job->id), JobState::kQueued);
  manager_->Tick();
  EXPECT_EQ(State(job->id), JobState::kStarting);
  ASSERT_EQ(runner_->launches.size(), 1u);
  const GangLaunch& g = runner_->launches[0];
  ASSERT_EQ(g.ranks.size(), 2u);
  EXPECT_EQ(g.ranks[1].argv, std::vector<std::string>{"/opt/accel-worker"});
  EXPECT_EQ(g.ranks[1].log_path, "/logs/job-1/attempt-1/rank-1.log");
  const auto& env = g.ranks[1].env;
  for (const char* kv : {"RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2",
                         "MASTER_ADDR=127.0.0.1", "MASTER_PORT=7070", "ACCEL_JOB_ID=job-1",
                         "ACCEL_ATTEMPT=1", "ACCEL_COORDINATOR=127.0.0.1:7070",
                         "ACCEL_WORKER_TOKEN=tok1", "OMP_NUM_THREADS=3", "PATH=/bin"}) {
    EXPECT_THAT(env, Contains(std::string(kv)));
  }
  EXPECT_THAT(env, ::testing::Not(Contains(std::string("RANK=stale"))));
  EXPECT_EQ(manager_->Cluster().free_slots, 1);

  RegisterAll(job->id);
  EXPECT_EQ(State(job->id), JobState::kRunning);
  auto who = *manager_->AuthenticateWorker("tok1");
  WorkerReport metrics{EventKind::kMetrics, R"({"step":"4"})", std::nullopt, 4};
  ASSERT_TRUE(manager_->Report(who, 0, {metrics}).ok());
  EXPECT_EQ(registry_->Get(job->id)->last_step, 4);

  runner_->Exit(job->id, 1, 0, 0);
  manager_->Tick();
  EXPECT_EQ(State(job->id), JobState::kRunning);  // rank 1 still runs
  runner_->Exit(job->id, 1, 1, 0);
  manager_->Tick();
  EXPECT_EQ(State(job->id), JobState::kSucceeded);
  EXPECT_THAT(States(job->id), ElementsAre("QUEUED", "STARTING", "RUNNING", "SUCCEEDED"));
  EXPECT_EQ(manager_->Cluster().free_slots, 3);
  // The token died with the attempt.
  EXPECT_EQ(manager_->AuthenticateWorker("tok1").status().code(),
            absl::StatusCode::kUnauthenticated);
  auto attempts = *store_->ListAttempts(job->id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].outcome, "succeeded");
}

TEST_F(JobManagerTest, AnAcceldWithoutATcpPortGivesItsWorkersNoMasterPort) {
  // acceld --listen "" (a unix socket only, as scripts/run-default.sh runs it): a worker refuses
  // MASTER_PORT=0, so the variables are left out rather than set to it.
  manager_->SetWorkerAddress("unix:/tmp/acceld.sock", "127.0.0.1", 0);
  auto job = manager_->Submit(Job(1));
  ASSERT_TRUE(job.ok());
  manager_->Tick();
  ASSERT_EQ(runner_->launches.size(), 1u);
  const auto& env = runner_->launches[0].ranks[0].env;
  EXPECT_THAT(env, Contains(std::string("ACCEL_COORDINATOR=unix:/tmp/acceld.sock")));
  for (const std::string& kv : env) {
    EXPECT_NE(kv.rfind("MASTER_PORT=", 0), 0u) << kv;
    EXPECT_NE(kv.rfind("MASTER_ADDR=", 0), 0u) << kv;
  }
}

TEST_F(JobManagerTest, ARankFailureStopsTheGangAndRestartsUntilMaxRestarts) {
  auto job = manager_->Submit(Job(2, /*max_restarts=*/1));
  ASSERT_TRUE(job.ok());
  manager_->Tick();
  RegisterAll(job->id);
  runner_->Exit(job->id, 1, 1, 1, 0, "loading\nboom: bad data\n");
  manager_->Tick();
  EXPECT_THAT(runner_->stops, ElementsAre("job-1/1"));
  EXPECT_EQ(State(job->id), JobState::kRunning);  // until every rank is gone
  runner_->Exit(job->id, 1, 0, 0, SIGTERM);
  manager_->Tick();
  auto rec = *registry_->Get(job->id);
  EXPECT_EQ(rec.state, JobState::kStarting);
  EXPECT_EQ(rec.attempt, 2);
  EXPECT_EQ(rec.restarts_used, 1);
  ASSERT_EQ(runner_->launches.size(), 2u);
  EXPECT_EQ(runner_->launches[1].attempt, 2);
  EXPECT_EQ(manager_->Cluster().free_slots, 1);  // kept its slots
  // The old attempt's token no longer works; the new one does.
  EXPECT_FALSE(manager_->AuthenticateWorker("tok1").ok());
  RegisterAll(job->id);
  runner_->Exit(job->id, 2, 0, 2);
  manager_->Tick();
  runner_->Exit(job->id, 2, 1, 0, SIGKILL);  // our stop, after the grace period
  manager_->Tick();
  rec = *registry_->Get(job->id);
  EXPECT_EQ(rec.state, JobState::kFailed);
  EXPECT_EQ(rec.error, "rank 0 exited with code 2");
  EXPECT_THAT(States(job->id), ElementsAre("QUEUED", "STARTING", "RUNNING", "RESTARTING",
                                           "STARTING", "RUNNING", "FAILED"));
  auto events = *log_->Read(job->id, 0, 100);
  bool restart_message = false;
  for (const Event& e : events) {
    if (e.body_json.find("rank 1 exited with code 1: boom: bad data") != std::string::npos) {
      restart_message = true;
    }
  }
  EXPECT_TRUE(restart_message);
  EXPECT_EQ(manager_->Cluster().free_slots, 3);
}

TEST_F(JobManagerTest, AKilledRankIsBlamedOverPeersThatFailedWithIt) {
  auto job = manager_->Submit(Job(2));
  manager_->Tick();
  RegisterAll(job->id);
  // Both exits land in one poll; rank 0's comm error is a consequence of rank 1's death.
  runner_->Exit(job->id, 1, 0, 1, 0, "lost connection to rank 1");
  runner_->Exit(job->id, 1, 1, 0, SIGKILL);
  manager_->Tick();
  EXPECT_EQ(registry_->Get(job->id)->error, "rank 1 killed by signal 9 (Killed)");
}

// A probe of issue 16: a killed rank's error carried whatever info line it printed last.
TEST_F(JobManagerTest, AKilledRanksErrorCarriesNoUnrelatedLogLine) {
  auto job = manager_->Submit(Job(2));
  manager_->Tick();
  RegisterAll(job->id);
  runner_->Exit(job->id, 1, 1, 0, SIGKILL, "[info] registered: attempt 1, 2 ranks");
  manager_->Tick();
  runner_->Exit(job->id, 1, 0, 0, SIGTERM);  // the rest of the gang, stopped
  manager_->Tick();
  EXPECT_EQ(registry_->Get(job->id)->error, "rank 1 killed by signal 9 (Killed)");
}

TEST_F(JobManagerTest, CancelStopsRunningGangsAndDropsQueuedJobs) {
  auto a = manager_->Submit(Job(2));
  auto b = manager_->Submit(Job(2));
  manager_->Tick();
  EXPECT_EQ(State(a->id), JobState::kStarting);
  EXPECT_EQ(State(b->id), JobState::kQueued);
  auto cb = manager_->Cancel(b->id);
  ASSERT_TRUE(cb.ok());
  EXPECT_EQ(cb->state, JobState::kCancelled);
  auto ca = manager_->Cancel(a->id);
  ASSERT_TRUE(ca.ok());
  EXPECT_EQ(ca->state, JobState::kStarting);  // until the workers are gone
  EXPECT_THAT(runner_->stops, ElementsAre("job-1/1"));
  runner_->Exit(a->id, 1, 0, 0, SIGTERM);
  runner_->Exit(a->id, 1, 1, 0, SIGTERM);
  manager_->Tick();
  EXPECT_EQ(State(a->id), JobState::kCancelled);
  EXPECT_EQ(manager_->Cancel(a->id)->state, JobState::kCancelled);  // idempotent
  EXPECT_EQ(manager_->Cluster().free_slots, 3);
  EXPECT_EQ(runner_->launches.size(), 1u);
}

TEST_F(JobManagerTest, GangsThatDoNotFitTogetherRunOneAfterTheOther) {
  auto a = manager_->Submit(Job(2));
  auto b = manager_->Submit(Job(2));
  manager_->Tick();
  ASSERT_EQ(runner_->launches.size(), 1u);
  EXPECT_THAT(manager_->Cluster().queue, ElementsAre(b->id));
  RegisterAll(a->id);
  runner_->Exit(a->id, 1, 0, 0);
  runner_->Exit(a->id, 1, 1, 0);
  manager_->Tick();
  EXPECT_EQ(State(a->id), JobState::kSucceeded);
  ASSERT_EQ(runner_->launches.size(), 2u);
  EXPECT_EQ(runner_->launches[1].job_id, b->id);
}

TEST_F(JobManagerTest, RejectsJobsLargerThanTheCluster) {
  auto big = manager_->Submit(Job(4));
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("resources.num_processes"));
  EXPECT_TRUE(registry_->List().empty());
}

TEST_F(JobManagerTest, ASilentRankCountsAsFailed) {
  auto job = manager_->Submit(Job(2));
  manager_->Tick();
  RegisterAll(job->id);
  auto who = *manager_->AuthenticateWorker(manager_->TokenForTest(job->id));
  clock_.Advance(20'000'000);
  ASSERT_TRUE(manager_->Report(who, 0, {}).ok());  // rank 0 heartbeats, rank 1 does not
  clock_.Advance(15'000'000);
  manager_->Tick();
  EXPECT_THAT(runner_->stops, ElementsAre("job-1/1"));
  runner_->Exit(job->id, 1, 0, 0, SIGTERM);
  runner_->Exit(job->id, 1, 1, 0, SIGKILL);
  manager_->Tick();
  auto rec = *registry_->Get(job->id);
  EXPECT_EQ(rec.state, JobState::kFailed);
  EXPECT_THAT(rec.error, HasSubstr("rank 1 sent no heartbeat for 35s"));
}

// A probe of issue 16: a job that ended SUCCEEDED still showed an earlier attempt's error.
TEST_F(JobManagerTest, ASucceededJobShowsNoErrorOfAnEarlierAttempt) {
  auto job = manager_->Submit(Job(2, /*max_restarts=*/1));
  manager_->Tick();
  RegisterAll(job->id);
  runner_->Exit(job->id, 1, 0, 1);
  runner_->Exit(job->id, 1, 1, 0, SIGTERM);
  manager_->Tick();
  EXPECT_THAT(registry_->Get(job->id)->error, HasSubstr("rank "));  // the failed attempt's
  manager_->Tick();
  ASSERT_EQ(registry_->Get(job->id)->attempt, 2);
  RegisterAll(job->id);
  runner_->Exit(job->id, 2, 0, 0);
  runner_->Exit(job->id, 2, 1, 0);
  manager_->Tick();
  const JobRecord rec = *registry_->Get(job->id);
  EXPECT_EQ(rec.state, JobState::kSucceeded);
  EXPECT_EQ(rec.error, "");
  auto attempts = *store_->ListAttempts(job->id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_THAT(attempts[0].outcome, HasSubstr("failed"));
}

TEST_F(JobManagerTest, AfterARestartRunningJobsResumeWithoutUsingARestart) {
  auto job = manager_->Submit(Job(2, /*max_restarts=*/0));
  auto queued = manager_->Submit(Job(2));
  manager_->Tick();
  RegisterAll(job->id);
  ASSERT_EQ(State(job->id), JobState::kRunning);
  const int64_t seq_before = *log_->LastSeq(job->id);
  Open(/*slots=*/3);  // acceld killed and started again over the same database
  EXPECT_EQ(State(job->id), JobState::kRestarting);
  EXPECT_EQ(State(queued->id), JobState::kQueued);
  manager_->Tick();
  auto rec = *registry_->Get(job->id);
  EXPECT_EQ(rec.state, JobState::kStarting);
  EXPECT_EQ(rec.attempt, 2);
  EXPECT_EQ(rec.restarts_used, 0);
  EXPECT_GT(*log_->LastSeq(job->id), seq_before);  // earlier events kept, new ones follow
  EXPECT_EQ(State(queued->id), JobState::kQueued);  // FIFO: behind the resumed job
  auto attempts = *store_->ListAttempts(job->id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_THAT(attempts[0].outcome, HasSubstr("interrupted"));
}

TEST_F(JobManagerTest, ShutdownAsksRunningGangsToCheckpointAndKeepsThemResumable) {
  JobRecord with_ckpt = Job(2, /*max_restarts=*/0);
  with_ckpt.spec_json = R"({"checkpoint":{"dir":"/ckpt"},"resources":{"num_processes":2}})";
  with_ckpt.knobs.checkpoint_dir = "/ckpt";
  auto job = manager_->Submit(with_ckpt);
  auto plain = manager_->Submit(Job(1));  // no checkpoint.dir: stopped as before
  manager_->Tick();
  RegisterAll(job->id);
  RegisterAll(plain->id);
  runner_->on_request_exit = {0, 1};
  runner_->on_stop_exit = {0};
  manager_->Shutdown();
  EXPECT_THAT(runner_->checkpoint_requests, ElementsAre("job-1/1"));
  EXPECT_THAT(runner_->stops, ElementsAre("job-2/1"));  // the checkpointing gang was not stopped
  EXPECT_EQ(State(job->id), JobState::kRunning);
  EXPECT_EQ(registry_->Get(job->id)->restarts_used, 0);
  auto attempts = *store_->ListAttempts(job->id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].outcome, "interrupted: acceld stopped after a checkpoint on request");
  bool notice = false;
  // Held in a variable: a range-for over `*Read(...)` iterates a vector the temporary StatusOr
  // has already destroyed (TSan and ASan report the heap use after free).
  const absl::StatusOr<std::vector<Event>> events = log_->Read(job->id, 0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  for (const Event& e : *events) {
    notice = notice || (e.kind == EventKind::kLog && e.rank == -1 &&
                        e.body_json.find("asked the 2 ranks to checkpoint") != std::string::npos);
  }
  EXPECT_TRUE(notice);
  // The next acceld resumes it without using up a restart, and keeps the attempt's record.
  const AttemptRecord drained = attempts[0];
  clock_.Advance(7'000'000);
  Open(/*slots=*/3);
  attempts = *store_->ListAttempts(job->id);
  EXPECT_EQ(attempts[0].outcome, "interrupted: acceld stopped after a checkpoint on request");
  EXPECT_EQ(attempts[0].end_us, drained.end_us);
  manager_->Tick();
  EXPECT_EQ(State(job->id), JobState::kStarting);
  EXPECT_EQ(registry_->Get(job->id)->attempt, 2);
  EXPECT_EQ(registry_->Get(job->id)->restarts_used, 0);
}

TEST_F(JobManagerTest, AKilledAcceldsSuccessorRecordsTheInterruptedAttemptWithItsOwnStart) {
  auto job = manager_->Submit(Job(2, /*max_restarts=*/1));
  manager_->Tick();
  RegisterAll(job->id);
  clock_.Advance(5'000'000);
  runner_->Exit(job->id, 1, 0, 0, SIGKILL);
  manager_->Tick();
  runner_->Exit(job->id, 1, 1, 0, SIGTERM);
  manager_->Tick();  // attempt 2 starts, 5 s after the job's first start
  ASSERT_EQ(registry_->Get(job->id)->attempt, 2);
  const int64_t second_start = (*store_->ListAttempts(job->id))[1].start_us;
  EXPECT_EQ(second_start, registry_->Get(job->id)->start_us + 5'000'000);
  clock_.Advance(3'000'000);
  Open(/*slots=*/3);  // acceld was killed (no Shutdown) and started again
  auto attempts = *store_->ListAttempts(job->id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[1].start_us, second_start);
  EXPECT_EQ(attempts[1].end_us, second_start + 3'000'000);
  EXPECT_EQ(attempts[1].outcome, "interrupted: acceld stopped");
}

TEST_F(JobManagerTest, RanksThatDoNotCheckpointInTimeAreStoppedAfterTheGrace) {
  JobRecord with_ckpt = Job(2);
  with_ckpt.spec_json = R"({"checkpoint":{"dir":"/ckpt"},"stop_grace_s":2})";
  with_ckpt.knobs.checkpoint_dir = "/ckpt";
  with_ckpt.knobs.stop_grace_s = 2;
  auto job = manager_->Submit(with_ckpt);
  manager_->Tick();
  RegisterAll(job->id);
  runner_->on_request_exit = {0};  // rank 1 is stuck in a step
  runner_->on_stop_exit = {1};
  manager_->Shutdown();  // the fake clock runs through the grace period
  EXPECT_THAT(runner_->checkpoint_requests, ElementsAre("job-1/1"));
  EXPECT_THAT(runner_->stops, ElementsAre("job-1/1"));
  EXPECT_EQ(State(job->id), JobState::kRunning);
  EXPECT_EQ((*store_->ListAttempts(job->id))[0].outcome, "interrupted: acceld stopped");
}

}  // namespace
}  // namespace accel::server
