// JobManager tests' fixture: a fake GangRunner that records launches and stops (tests decide how
// ranks end) and a JobManager over it with a fake clock and a temporary store.
#pragma once

#include "engine/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/job_manager.h"
#include "server/core/test_util.h"

namespace accel::server::testing {

// Records launches and stops; tests decide how ranks end.
class FakeRunner : public GangRunner {
 public:
  absl::StatusOr<std::string> Launch(const GangLaunch& gang) override {
    launches.push_back(gang);
    for (const RankLaunch& r : gang.ranks) live_.insert({gang.job_id, r.rank});
    if (cluster.empty()) return std::string();
    return cluster + " job " + std::to_string(launches.size());
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
  bool Pending(const std::string& job_id, int attempt) const override { return pending; }
  void Forget(const std::string& placement) override { forgotten.push_back(placement); }
  absl::Status CheckSettings(const std::map<std::string, std::string>&) const override {
    return settings_error;
  }

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
  std::string cluster;               // non-empty: a cluster launcher ("slurm job <n>")
  bool pending = false;              // what Pending() answers
  std::vector<std::string> forgotten;
  absl::Status settings_error;       // what CheckSettings answers

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
  // `tune` may change the options before the manager is made.
  void Open(int slots, int gpus = 0,
            const std::function<void(ManagerOptions&)>& tune = nullptr) {
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
    if (tune) tune(o);
    manager_ = std::make_unique<JobManager>(o, registry_.get(), log_.get(), store_.get(),
                                            runner_.get(), &clock_);
    ASSERT_TRUE(manager_->Recover().ok());
  }
  JobRecord Job(int slots, int max_restarts = 0, int priority = 0) {
    JobRecord j;
    j.name = "t";
    j.spec_json = R"({"name":"t","resources":{"num_processes":2,"threads_per_process":3}})";
    j.knobs.threads = 3;
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
  accel::testing::FakeClock clock_{1'000'000};
  std::unique_ptr<FakeRunner> runner_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<JobRegistry> registry_;
  std::unique_ptr<JobManager> manager_;
};

}  // namespace accel::server::testing
