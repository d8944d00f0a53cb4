#include "server/core/state_store.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/state_store_test_util.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {


TEST(StateStoreTest, JobsEventsAttemptsAndCheckpointsSurviveReopen) {
  const std::string path = FreshTestDir() + "/state.db";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    JobRecord job = SampleJob();
    ASSERT_TRUE((*store)->Write(&job, {MakeEvent("job-7", 1, EventKind::kState, "{}"),
                                       MakeEvent("job-7", 2, EventKind::kMetrics, R"({"step":"0"})")})
                    .ok());
    ASSERT_TRUE((*store)->PutAttempt({"job-7", 1, 20, 30, "failed: x"}).ok());
    ASSERT_TRUE((*store)->AddCheckpoint({"job-7", 2, 40, "/ckpt/step-40", "weights", 123, 0.5, 99})
                    .ok());
  }
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  const JobRecord& j = jobs->front();
  EXPECT_EQ(j.id, "job-7");
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.attempt, 2);
  EXPECT_EQ(j.restarts_used, 1);
  EXPECT_EQ(j.error, "rank 1 exited with code 1");
  EXPECT_EQ(j.last_step, 41);
  EXPECT_EQ(j.spec_json, R"({"name":"tiny"})");

  auto events = (*store)->ReadEvents("job-7", 0, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].seq, 2);
  EXPECT_EQ((*events)[1].kind, EventKind::kMetrics);
  EXPECT_EQ((*events)[1].body_json, R"({"step":"0"})");
  auto after = (*store)->ReadEvents("job-7", 1, 10);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ(*(*store)->LastSeq("job-7"), 2);
  EXPECT_EQ(*(*store)->LastSeq("job-unknown"), 0);

  auto attempts = (*store)->ListAttempts("job-7");
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].outcome, "failed: x");
  auto ckpts = (*store)->ListCheckpoints("job-7");
  ASSERT_TRUE(ckpts.ok());
  ASSERT_EQ(ckpts->size(), 1u);
  EXPECT_EQ((*ckpts)[0].path, "/ckpt/step-40");
  EXPECT_EQ((*ckpts)[0].bytes, 123);
}

// Issue 31: a checkpoint's eval loss is stored with it (NULL when the step was not evaluated).
TEST(StateStoreTest, CheckpointsKeepTheirEvalLoss) {
  const std::string path = FreshTestDir() + "/state.db";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    JobRecord job = SampleJob();
    ASSERT_TRUE((*store)->Write(&job, {}).ok());
    CheckpointRecord evaluated{"job-7", 1, 10, "/ckpt/step_10", "sharded", 1, 0.1, 5};
    evaluated.eval_loss = 2.125;
    ASSERT_TRUE((*store)->AddCheckpoint(evaluated).ok());
    ASSERT_TRUE((*store)->AddCheckpoint({"job-7", 1, 20, "/ckpt/step_20", "sharded", 1, 0.1, 6})
                    .ok());
  }
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto ckpts = (*store)->ListCheckpoints("job-7");
  ASSERT_TRUE(ckpts.ok()) << ckpts.status();
  ASSERT_EQ(ckpts->size(), 2u);
  EXPECT_EQ((*ckpts)[0].eval_loss, 2.125);
  EXPECT_FALSE((*ckpts)[1].eval_loss.has_value());
}

TEST(StateStoreTest, FindsTheNewestEventOfAKind) {
  auto store = StateStore::Open(FreshTestDir() + "/state.db");
  ASSERT_TRUE(store.ok()) << store.status();
  JobRecord job = SampleJob();
  ASSERT_TRUE((*store)->Write(&job, {MakeEvent("job-7", 1, EventKind::kMetrics, R"({"step":"0"})"),
                                     MakeEvent("job-7", 2, EventKind::kMetrics, R"({"step":"1"})"),
                                     MakeEvent("job-7", 3, EventKind::kMemory, "{}")})
                  .ok());
  auto metrics = (*store)->LastEventOfKind("job-7", EventKind::kMetrics);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_TRUE(metrics->has_value());
  EXPECT_EQ((*metrics)->seq, 2);
  EXPECT_EQ((*metrics)->body_json, R"({"step":"1"})");
  auto none = (*store)->LastEventOfKind("job-7", EventKind::kCheckpoint);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  auto other_job = (*store)->LastEventOfKind("job-8", EventKind::kMetrics);
  ASSERT_TRUE(other_job.ok());
  EXPECT_FALSE(other_job->has_value());
}

TEST(StateStoreTest, AFailedWriteChangesNothing) {
  auto store = StateStore::Open(FreshTestDir() + "/state.db");
  ASSERT_TRUE(store.ok());
  JobRecord job = SampleJob();
  ASSERT_TRUE((*store)->Write(&job, {MakeEvent("job-7", 1, EventKind::kState, "{}")}).ok());
  JobRecord changed = job;
  changed.state = JobState::kFailed;
  // seq 1 exists: the whole transaction, job row included, rolls back.
  absl::Status s = (*store)->Write(&changed, {MakeEvent("job-7", 2, EventKind::kLog, "{}"),
                                              MakeEvent("job-7", 1, EventKind::kLog, "{}")});
  EXPECT_FALSE(s.ok());
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->front().state, JobState::kRunning);
  // The typed record beside the spec comes back as written.
  EXPECT_EQ(jobs->front().plan_json, R"({"strategy":"full_shard"})");
  EXPECT_EQ(jobs->front().training_plan, job.training_plan);
  EXPECT_EQ(jobs->front().knobs.device, DeviceKind::kCuda);
  EXPECT_EQ(jobs->front().knobs.threads, 3);
  EXPECT_DOUBLE_EQ(jobs->front().knobs.heartbeat_timeout_s, 7.5);
  EXPECT_DOUBLE_EQ(jobs->front().knobs.stop_grace_s, 2);
  EXPECT_EQ(jobs->front().knobs.checkpoint_dir, "/ckpt");
  EXPECT_EQ(*(*store)->LastSeq("job-7"), 1);
}

TEST(StateStoreTest, RefusesADatabaseFromANewerSchema) {
  const std::string path = FreshTestDir() + "/state.db";
  { ASSERT_TRUE(StateStore::Open(path).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = StateStore::Open(path);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), ::testing::HasSubstr("schema version 99"));
}

// A database of schema version 1 (specs only) gains the typed knobs, read once from each
// stored spec.
TEST(StateStoreTest, MigratesAVersionOneDatabaseReadingKnobsFromTheSpecs) {
  const std::string path = FreshTestDir() + "/state.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* v1 = R"sql(
    CREATE TABLE jobs (id TEXT PRIMARY KEY, number INTEGER NOT NULL UNIQUE, name TEXT NOT NULL,
      spec_json TEXT NOT NULL, slots INTEGER NOT NULL, priority INTEGER NOT NULL,
      max_restarts INTEGER NOT NULL, state TEXT NOT NULL, attempt INTEGER NOT NULL,
      restarts_used INTEGER NOT NULL, error TEXT NOT NULL, submit_us INTEGER NOT NULL,
      start_us INTEGER NOT NULL, end_us INTEGER NOT NULL, last_step INTEGER NOT NULL);
    CREATE TABLE attempts (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
      start_us INTEGER NOT NULL, end_us INTEGER NOT NULL, outcome TEXT NOT NULL,
      PRIMARY KEY (job_id, attempt));
    INSERT INTO attempts VALUES ('job-1', 1, 5, 6, 'failed: x');
    INSERT INTO jobs VALUES ('job-1', 1, 'old',
      '{"resources":{"device":"cuda","threads_per_process":4},"stop_grace_s":3,"checkpoint":{"dir":"/ck"}}',
      2, 0, 0, 'QUEUED', 0, 0, '', 1, 0, 0, -1);
    INSERT INTO jobs VALUES ('job-2', 2, 'bare', '{}', 1, 0, 0, 'QUEUED', 0, 0, '', 2, 0, 0, -1);
    PRAGMA user_version=1;)sql";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].knobs.device, DeviceKind::kCuda);
  EXPECT_EQ((*jobs)[0].knobs.threads, 4);
  EXPECT_DOUBLE_EQ((*jobs)[0].knobs.stop_grace_s, 3);
  EXPECT_EQ((*jobs)[0].knobs.checkpoint_dir, "/ck");
  EXPECT_EQ((*jobs)[0].plan_json, "");
  EXPECT_EQ((*jobs)[1].knobs.device, DeviceKind::kCpu);
  EXPECT_EQ((*jobs)[1].knobs.threads, 1);
  EXPECT_EQ((*jobs)[1].knobs.checkpoint_dir, "");
  // Version 4: jobs stored before launchers ran locally on one node; attempts have no placement.
  EXPECT_EQ((*jobs)[0].knobs.launcher, "local");
  EXPECT_EQ((*jobs)[0].knobs.nodes, 1);
  EXPECT_TRUE((*jobs)[0].knobs.launcher_settings.empty());
  auto attempts = (*store)->ListAttempts("job-1");
  ASSERT_TRUE(attempts.ok()) << attempts.status();
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].outcome, "failed: x");
  EXPECT_EQ((*attempts)[0].placement, "");
}

// A job on a cluster keeps its launcher, nodes, settings and the cluster's name for its newest
// attempt across a reopen.
TEST(StateStoreTest, KeepsWhereAJobsRanksRun) {
  const std::string path = FreshTestDir() + "/state.db";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    JobRecord job;
    job.id = "job-1";
    job.number = 1;
    job.spec_json = "{}";
    job.knobs.launcher = "slurm";
    job.knobs.nodes = 2;
    job.knobs.launcher_settings = {{"partition", "debug"}, {"time", "10"}};
    job.placement = "slurm job 42";
    ASSERT_TRUE((*store)->Write(&job, {}).ok());
    ASSERT_TRUE((*store)->PutAttempt({"job-1", 1, 10, 0, "", "slurm job 42"}).ok());
  }
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].knobs.launcher, "slurm");
  EXPECT_EQ((*jobs)[0].knobs.nodes, 2);
  EXPECT_EQ((*jobs)[0].knobs.launcher_settings,
            (std::map<std::string, std::string>{{"partition", "debug"}, {"time", "10"}}));
  EXPECT_EQ((*jobs)[0].placement, "slurm job 42");
  auto attempts = (*store)->ListAttempts("job-1");
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].placement, "slurm job 42");
}

// Probes of issue 16: a zero-length state.db silently started fresh (reusing job-1); a damaged
// one was only noticed later. Both are refused at open, naming the file.
TEST(StateStoreTest, AnEmptyOrDamagedDatabaseIsRefusedNotReplaced) {
  const std::string dir = FreshTestDir();
  const std::string empty = dir + "/empty.db";
  std::ofstream(empty).close();
  auto store = StateStore::Open(empty);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(store.status().message()),
              ::testing::AllOf(::testing::HasSubstr(empty), ::testing::HasSubstr("empty")));
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);  // left as it was

  const std::string damaged = dir + "/damaged.db";
  {
    auto s = StateStore::Open(damaged);
    ASSERT_TRUE(s.ok()) << s.status();
    JobRecord job = SampleJob();
    for (int i = 0; i < 200; ++i) {
      job.id = "job-" + std::to_string(i);
      job.number = i;
      job.spec_json = std::string(400, 'x');
      ASSERT_TRUE((*s)->PutJob(job).ok());
    }
  }
  sqlite3* db = nullptr;  // fold the WAL into the file, then overwrite pages 3.. with garbage
  ASSERT_EQ(sqlite3_open(damaged.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2 * 4096);
    const std::string garbage(8 * 4096, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  store = StateStore::Open(damaged);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_THAT(std::string(store.status().message()), ::testing::HasSubstr(damaged));
}

TEST(StateStoreTest, UsesWriteAheadLogging) {
  const std::string path = FreshTestDir() + "/state.db";
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok());
  JobRecord job = SampleJob();
  ASSERT_TRUE((*store)->PutJob(job).ok());
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
}


}  // namespace
}  // namespace accel::server
