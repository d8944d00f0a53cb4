#include "server/core/retention.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/job_manager_test_fixture.h"

namespace accel::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

JobRecord Ended(const std::string& id, int64_t number, JobState state, int64_t end_us) {
  JobRecord j;
  j.id = id;
  j.number = number;
  j.state = state;
  j.end_us = end_us;
  return j;
}

TEST(RetentionTest, KeepsTheLastEndedJobsAndNeverTouchesLiveOnes) {
  std::vector<JobRecord> jobs = {
      Ended("job-1", 1, JobState::kSucceeded, 300), Ended("job-2", 2, JobState::kRunning, 0),
      Ended("job-3", 3, JobState::kFailed, 100), Ended("job-4", 4, JobState::kCancelled, 200),
      Ended("job-5", 5, JobState::kQueued, 0)};
  EXPECT_THAT(ExpiredJobs(jobs, RetentionPolicy{.keep_finished = 1}, 1000),
              ElementsAre("job-3", "job-4"));  // the earliest ended go first
  EXPECT_THAT(ExpiredJobs(jobs, RetentionPolicy{.keep_finished = 3}, 1000), IsEmpty());
  EXPECT_THAT(ExpiredJobs(jobs, RetentionPolicy{}, 1'000'000'000), IsEmpty());  // disabled
  // A day's TTL at 1 day + 250 us: the jobs that ended at or before 250 us are expired.
  const int64_t day_us = 86'400'000'000;
  EXPECT_THAT(ExpiredJobs(jobs, RetentionPolicy{.finished_ttl = absl::Hours(24)}, day_us + 250),
              ElementsAre("job-3", "job-4"));
  // Both rules: whichever removes more.
  EXPECT_THAT(ExpiredJobs(jobs,
                          RetentionPolicy{.keep_finished = 2, .finished_ttl = absl::Hours(24)},
                          day_us + 150),
              ElementsAre("job-3"));
}

TEST(RetentionTest, ParsesDurationsAndNamesTheFlagWhenItCannot) {
  EXPECT_EQ(*ParseRetentionDuration("0", "--ttl"), absl::ZeroDuration());
  EXPECT_EQ(*ParseRetentionDuration("90s", "--ttl"), absl::Seconds(90));
  EXPECT_EQ(*ParseRetentionDuration("30m", "--ttl"), absl::Minutes(30));
  EXPECT_EQ(*ParseRetentionDuration("1.5h", "--ttl"), absl::Minutes(90));
  EXPECT_EQ(*ParseRetentionDuration("7d", "--ttl"), absl::Hours(7 * 24));
  for (const char* bad : {"", "7", "7w", "-1d", "inf d", "nand", "1e9d", "d"}) {
    auto parsed = ParseRetentionDuration(bad, "--ttl");
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("--ttl: '")) << bad;
  }
}

class JobManagerDeleteTest : public testing::JobManagerTest {
 protected:
  // A job that ran to SUCCEEDED, with a rank log under the manager's log directory.
  std::string RunToSuccess() {
    auto job = manager_->Submit(Job(1));
    EXPECT_TRUE(job.ok()) << job.status();
    manager_->Tick();
    RegisterAll(job->id);
    manager_->Tick();
    std::filesystem::create_directories(log_dir_ + "/" + job->id + "/attempt-1");
    std::ofstream(log_dir_ + "/" + job->id + "/attempt-1/rank-0.log") << "hello\n";
    runner_->Exit(job->id, 1, 0, 0);
    manager_->Tick();
    EXPECT_EQ(State(job->id), JobState::kSucceeded);
    return job->id;
  }
  std::string log_dir_ = FreshTestDir() + "/logs";
};

TEST_F(JobManagerDeleteTest, DeletesOnlyEndedJobsWithTheirLogs) {
  Open(3, 0, [this](ManagerOptions& o) { o.log_dir = log_dir_; });
  const std::string done = RunToSuccess();
  auto running = manager_->Submit(Job(1));
  manager_->Tick();
  auto refused = manager_->Delete(running->id);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_EQ(State(running->id), JobState::kStarting);

  auto gone = manager_->Delete(done);
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(gone->state, JobState::kSucceeded);
  EXPECT_FALSE(std::filesystem::exists(log_dir_ + "/" + done));
  EXPECT_TRUE(absl::IsNotFound(registry_->Get(done).status()));
  EXPECT_TRUE(store_->ListAttempts(done)->empty());
  EXPECT_TRUE(absl::IsNotFound(manager_->Delete(done).status()));
}

TEST_F(JobManagerDeleteTest, RetentionForgetsTheEarliestEndedJobsOnItsInterval) {
  Open(3, 0, [this](ManagerOptions& o) {
    o.log_dir = log_dir_;
    o.retention.keep_finished = 2;
    o.retention.sweep_interval = absl::Seconds(60);
  });
  const std::string a = RunToSuccess();
  clock_.Advance(1'000'000);
  const std::string b = RunToSuccess();
  clock_.Advance(1'000'000);
  const std::string c = RunToSuccess();
  auto live = manager_->Submit(Job(3));
  ASSERT_TRUE(live.ok());
  manager_->Tick();
  EXPECT_TRUE(registry_->Get(a).ok()) << "the interval has not passed since the first sweep";
  clock_.Advance(61'000'000);
  manager_->Tick();
  EXPECT_TRUE(absl::IsNotFound(registry_->Get(a).status()));
  EXPECT_FALSE(std::filesystem::exists(log_dir_ + "/" + a));
  EXPECT_TRUE(registry_->Get(b).ok());
  EXPECT_TRUE(registry_->Get(c).ok());
  EXPECT_TRUE(registry_->Get(live->id).ok());
}

}  // namespace
}  // namespace accel::server
