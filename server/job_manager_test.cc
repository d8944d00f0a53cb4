#include "server/job_manager.h"

#include "engine/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/test_util.h"

namespace accel::server {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Records launches and stops; tests decide how ranks end.
class FakeRunner : public GangRunner {
 public:
  absl::Status Launch(const GangLaunch& gang) override {
    launches.push_back(gang);
    for (const RankLaunch& r : gang.ranks) live_.insert({gang.job_id, r.rank});
    return absl::OkStatus();
  }
  void Stop(const std::string& job_id, int attempt, absl::Duration grace) override {
    stops.push_back(job_id + "/" + std::to_string(attempt));
    for (int rank : on_stop_exit) Exit(job_id, attempt, rank, 0, SIGTERM);
    on_stop_exit.clear();
  }
  void RequestCheckpoint(const std::string& job_id, int attempt) override {
    checkpoint_requests.push_back(job_id + "/" + std::to_string(attempt));
    for (int rank : on_request_exit) Exit(job_id, attempt, rank, kWorkerExitCheckpointed);
  }
  PollResult Poll() override {
    PollResult r;
    r.exits.swap(pending_);
    for (const RankExit& e : r.exits) live_.erase({e.job_id, e.rank});
    return r;
  }
  int live() const override { return static_cast<int>(live_.size()); }

  void Exit(const std::string& job, int attempt, int rank, int code, int signal = 0,
            std::string tail = "") {
    RankExit e;
    e.job_id = job;
    e.attempt = attempt;
    e.rank = rank;
    e.exit_code = code;
    e.signal = signal;
    e.log_tail = std::move(tail);
    pending_.push_back(e);
  }

  std::vector<GangLaunch> launches;
  std::vector<std::string> stops;
  std::vector<std::string> checkpoint_requests;
  std::vector<int> on_request_exit;  // ranks that checkpoint and exit when asked
  std::vector<int> on_stop_exit;     // ranks that die of the next Stop's SIGTERM

 private:
  std::vector<RankExit> pending_;
  std::set<std::pair<std::string, int>> live_;
};

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = FreshTestDir() + "/state.db";
    Open(/*slots=*/3);
  }
  void Open(int slots, int gpus = 0) {
    manager_.reset();
    registry_.reset();
    log_.reset();
    store_.reset();
    runner_ = std::make_unique<FakeRunner>();
    store_ = *StateStore::Open(path_);
    log_ = std::make_unique<EventLog>(store_.get(), &clock_);
    registry_ = *JobRegistry::Load(store_.get(), log_.get(), &clock_);
    ManagerOptions o;
    o.total_slots = slots;
    for (int i = 0; i < gpus; ++i) o.gpus.push_back({i, "gpu-" + std::to_string(i), 80LL << 30});
    o.worker_bin = "/opt/accel-worker";
    o.coordinator_address = "127.0.0.1:7070";
    o.master_port = 7070;
    o.log_dir = "/logs";
    o.base_env = {"PATH=/bin", "RANK=stale"};
    o.heartbeat_timeout = absl::Seconds(30);
    int n = 0;
    o.new_token = [n]() mutable { return "tok" + std::to_string(++n); };
    manager_ = std::make_unique<JobManager>(o, registry_.get(), log_.get(), store_.get(),
                                            runner_.get(), &clock_);
    ASSERT_TRUE(manager_->Recover().ok());
  }
  JobRecord Job(int slots, int max_restarts = 0, int priority = 0) {
    JobRecord j;
    j.name = "t";
    j.spec_json = R"({"name":"t","resources":{"num_processes":2,"threads_per_process":3}})";
    j.slots = slots;
    j.max_restarts = max_restarts;
    j.priority = priority;
    return j;
  }
  JobState State(const std::string& id) { return registry_->Get(id)->state; }
  std::vector<std::string> States(const std::string& id) {
    std::vector<std::string> out;
    const std::vector<Event> events = *log_->Read(id, 0, 1000);
    for (const Event& e : events) {
      if (e.kind == EventKind::kState) {
        out.push_back(nlohmann::json::parse(e.body_json)["state"].get<std::string>());
      }
    }
    return out;
  }
  // Registers every rank of the job's current attempt.
  void RegisterAll(const std::string& id) {
    const std::string token = manager_->TokenForTest(id);
    auto who = manager_->AuthenticateWorker(token);
    ASSERT_TRUE(who.ok()) << who.status();
    const int world = registry_->Get(id)->slots;
    for (int r = 0; r < world; ++r) {
      auto a = manager_->Register(*who, r, 100 + r);
      ASSERT_TRUE(a.ok()) << a.status();
      EXPECT_EQ(a->world_size, world);
      EXPECT_EQ(a->rendezvous_prefix, id + "/attempt-" + std::to_string(who->attempt));
    }
  }

  std::string path_;
  testing::FakeClock clock_{1'000'000};
  std::unique_ptr<FakeRunner> runner_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<JobRegistry> registry_;
  std::unique_ptr<JobManager> manager_;
};

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
  for (const Event& e : *log_->Read(job->id, 0, 100)) {
    notice = notice || (e.kind == EventKind::kLog && e.rank == -1 &&
                        e.body_json.find("asked the 2 ranks to checkpoint") != std::string::npos);
  }
  EXPECT_TRUE(notice);
  // The next acceld resumes it without using up a restart.
  Open(/*slots=*/3);
  manager_->Tick();
  EXPECT_EQ(State(job->id), JobState::kStarting);
  EXPECT_EQ(registry_->Get(job->id)->attempt, 2);
  EXPECT_EQ(registry_->Get(job->id)->restarts_used, 0);
}

TEST_F(JobManagerTest, RanksThatDoNotCheckpointInTimeAreStoppedAfterTheGrace) {
  JobRecord with_ckpt = Job(2);
  with_ckpt.spec_json = R"({"checkpoint":{"dir":"/ckpt"},"stop_grace_s":2})";
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

std::string EnvValue(const std::vector<std::string>& env, const std::string& key) {
  for (const std::string& kv : env) {
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
  }
  return "<unset>";
}

TEST_F(JobManagerTest, CudaJobsGetOneGpuPerRankFromAPoolOfTheirOwn) {
  Open(/*slots=*/2, /*gpus=*/2);
  JobRecord cuda = Job(2);
  cuda.spec_json = R"({"resources":{"num_processes":2,"device":"cuda"}})";
  auto a = manager_->Submit(cuda);
  ASSERT_TRUE(a.ok()) << a.status();
  auto cpu = manager_->Submit(Job(2));  // the CPU pool is separate: it starts alongside
  JobRecord one = Job(1);
  one.spec_json = R"({"resources":{"num_processes":1,"device":"cuda"}})";
  auto waiting = manager_->Submit(one);  // no GPU left: queued, never partially placed
  manager_->Tick();
  ASSERT_EQ(runner_->launches.size(), 2u);
  const bool cuda_first = runner_->launches[0].job_id == a->id;
  const GangLaunch& g = runner_->launches[cuda_first ? 0 : 1];
  const GangLaunch& c = runner_->launches[cuda_first ? 1 : 0];
  ASSERT_EQ(g.job_id, a->id);
  ASSERT_EQ(c.job_id, cpu->id);
  EXPECT_EQ(EnvValue(g.ranks[0].env, "CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(EnvValue(g.ranks[1].env, "CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(EnvValue(g.ranks[1].env, "LOCAL_RANK"), "1");
  EXPECT_EQ(EnvValue(c.ranks[0].env, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(State(waiting->id), JobState::kQueued);
  ClusterView v = manager_->Cluster();
  ASSERT_EQ(v.pools.size(), 2u);
  EXPECT_EQ(v.pools[1].device, "cuda");
  EXPECT_EQ(v.pools[1].total_slots, 2);
  EXPECT_EQ(v.pools[1].free_slots, 0);
  EXPECT_THAT(v.pools[1].names, ElementsAre("gpu-0", "gpu-1"));
  EXPECT_EQ(v.pools[1].memory_bytes[0], 80LL << 30);
  EXPECT_EQ(v.allocation_device[a->id], "cuda");
  EXPECT_EQ(v.allocation_device[cpu->id], "cpu");
  EXPECT_THAT(v.queue, ElementsAre(waiting->id));
  // When the cuda gang ends, the waiting job gets GPU 0.
  RegisterAll(a->id);
  runner_->Exit(a->id, 1, 0, 0);
  runner_->Exit(a->id, 1, 1, 0);
  manager_->Tick();
  ASSERT_EQ(runner_->launches.size(), 3u);
  EXPECT_EQ(runner_->launches[2].job_id, waiting->id);
  EXPECT_EQ(EnvValue(runner_->launches[2].ranks[0].env, "CUDA_VISIBLE_DEVICES"), "0");
  // More GPUs than exist: refused at submit.
  JobRecord big = Job(3);
  big.spec_json = R"({"resources":{"num_processes":3,"device":"cuda"}})";
  EXPECT_THAT(std::string(manager_->Submit(big).status().message()),
              HasSubstr("resources.num_processes: the job needs 3 cuda slots but this acceld has 2"));
}

TEST_F(JobManagerTest, CudaJobsAreRefusedWithoutGpusNamingResourcesDevice) {
  JobRecord cuda = Job(1);
  cuda.spec_json = R"({"resources":{"num_processes":1,"device":"cuda"}})";
  auto s = manager_->Submit(cuda);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("resources.device: cuda needs GPUs"));
  EXPECT_TRUE(registry_->List().empty());
}

TEST_F(JobManagerTest, WorkerCallsOfAnEndedAttemptAreRejected) {
  auto job = manager_->Submit(Job(1, /*max_restarts=*/1));
  manager_->Tick();
  auto who = *manager_->AuthenticateWorker("tok1");
  ASSERT_TRUE(manager_->Register(who, 0, 1).ok());
  EXPECT_EQ(manager_->Register(who, 0, 1).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(manager_->Register(who, 1, 1).status().code(), absl::StatusCode::kInvalidArgument);
  runner_->Exit(job->id, 1, 0, 1);
  manager_->Tick();  // attempt 2 starts
  EXPECT_EQ(manager_->Report(who, 0, {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(manager_->Kv(who).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace accel::server
