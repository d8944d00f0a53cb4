#include "server/core/job_registry.h"

#include "engine/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

JobRecord Proto(const std::string& name) {
  JobRecord j;
  j.name = name;
  j.spec_json = "{}";
  j.slots = 2;
  return j;
}

std::vector<std::string> StatesOf(EventLog& log, const std::string& id) {
  std::vector<std::string> out;
  const std::vector<Event> events = *log.Read(id, 0, 100);
  for (const Event& e : events) {
    if (e.kind == EventKind::kState) {
      out.push_back(nlohmann::json::parse(e.body_json)["state"].get<std::string>());
    }
  }
  return out;
}

class JobRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = FreshTestDir() + "/state.db";
    Reopen();
  }
  void Reopen() {
    registry_.reset();
    log_.reset();
    store_.reset();
    store_ = *StateStore::Open(path_);
    log_ = std::make_unique<EventLog>(store_.get(), &clock_);
    auto r = JobRegistry::Load(store_.get(), log_.get(), &clock_);
    ASSERT_TRUE(r.ok()) << r.status();
    registry_ = std::move(*r);
  }
  std::string path_;
  testing::FakeClock clock_{5'000'000};
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<JobRegistry> registry_;
};

TEST_F(JobRegistryTest, CreateQueuesWithAStateEvent) {
  auto job = registry_->Create(Proto("a"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->id, "job-1");
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_EQ(job->submit_us, 5'000'000);
  EXPECT_EQ(StatesOf(*log_, "job-1"), std::vector<std::string>{"QUEUED"});
  EXPECT_EQ(registry_->Create(Proto("b"))->id, "job-2");
}

TEST_F(JobRegistryTest, WalksTheStateMachineAndRecordsEveryStep) {
  const std::string id = registry_->Create(Proto("a"))->id;
  ASSERT_TRUE(registry_->Transition(id, JobState::kStarting, "", [](JobRecord& j) { j.attempt = 1; }).ok());
  ASSERT_TRUE(registry_->Transition(id, JobState::kRunning, "").ok());
  ASSERT_TRUE(registry_->Transition(id, JobState::kRestarting, "rank 1 died").ok());
  ASSERT_TRUE(registry_->Transition(id, JobState::kStarting, "", [](JobRecord& j) { j.attempt = 2; }).ok());
  ASSERT_TRUE(registry_->Transition(id, JobState::kRunning, "").ok());
  clock_.Advance(7);
  auto done = registry_->Transition(id, JobState::kSucceeded, "all ranks finished");
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->end_us, 5'000'007);
  EXPECT_EQ(done->attempt, 2);
  EXPECT_EQ(StatesOf(*log_, id),
            (std::vector<std::string>{"QUEUED", "STARTING", "RUNNING", "RESTARTING", "STARTING",
                                      "RUNNING", "SUCCEEDED"}));
}

TEST_F(JobRegistryTest, IllegalTransitionsAreFailedPreconditionAndChangeNothing) {
  const std::string id = registry_->Create(Proto("a"))->id;
  auto s = registry_->Transition(id, JobState::kRunning, "");  // QUEUED -> RUNNING skips STARTING
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("QUEUED"));
  ASSERT_TRUE(registry_->Transition(id, JobState::kCancelled, "").ok());
  for (JobState to : {JobState::kQueued, JobState::kStarting, JobState::kRunning,
                      JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    EXPECT_EQ(registry_->Transition(id, to, "").status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(StatesOf(*log_, id), (std::vector<std::string>{"QUEUED", "CANCELLED"}));
  EXPECT_EQ(registry_->Get("job-99").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobRegistryTest, JobsAndNumbersSurviveARestart) {
  const std::string id = registry_->Create(Proto("a"))->id;
  ASSERT_TRUE(registry_->Transition(id, JobState::kStarting, "", [](JobRecord& j) { j.attempt = 1; }).ok());
  ASSERT_TRUE(registry_->Update(id, [](JobRecord& j) { j.last_step = 12; }).ok());
  Reopen();
  auto job = registry_->Get(id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state, JobState::kStarting);
  EXPECT_EQ(job->last_step, 12);
  EXPECT_EQ(registry_->Create(Proto("b"))->id, "job-2");
  EXPECT_EQ(*log_->LastSeq(id), 2);
}

TEST_F(JobRegistryTest, DeleteForgetsAnEndedJobAndNeverReusesItsId) {
  const std::string first = registry_->Create(Proto("a"))->id;
  const std::string newest = registry_->Create(Proto("b"))->id;
  auto refused = registry_->Delete(newest);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("job job-2 is QUEUED: only ended jobs"));
  ASSERT_TRUE(registry_->Transition(newest, JobState::kCancelled, "").ok());
  auto gone = registry_->Delete(newest);
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(gone->state, JobState::kCancelled);
  EXPECT_TRUE(absl::IsNotFound(registry_->Get(newest).status()));
  EXPECT_TRUE(absl::IsNotFound(registry_->Delete(newest).status()));
  EXPECT_TRUE(log_->Read(newest, 0, 100)->empty());
  Reopen();  // the newest job is gone from the store, yet its number stays used
  EXPECT_TRUE(absl::IsNotFound(registry_->Get(newest).status()));
  EXPECT_TRUE(registry_->Get(first).ok());
  EXPECT_EQ(registry_->Create(Proto("c"))->id, "job-3");
}

TEST(JobStateTest, TerminalStatesAndNames) {
  EXPECT_TRUE(IsTerminal(JobState::kSucceeded));
  EXPECT_FALSE(IsTerminal(JobState::kRestarting));
  EXPECT_EQ(*ParseJobState("RESTARTING"), JobState::kRestarting);
  EXPECT_FALSE(ParseJobState("DONE").ok());
  EXPECT_TRUE(IsLegalTransition(JobState::kRunning, JobState::kRestarting));
  EXPECT_FALSE(IsLegalTransition(JobState::kRestarting, JobState::kRunning));
}

}  // namespace
}  // namespace accel::server
