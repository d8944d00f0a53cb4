#include "server/state_store.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/test_util.h"

namespace accel::server {
namespace {

JobRecord SampleJob() {
  JobRecord j;
  j.id = "job-7";
  j.number = 7;
  j.name = "tiny";
  j.spec_json = R"({"name":"tiny"})";
  j.slots = 2;
  j.priority = 3;
  j.max_restarts = 1;
  j.state = JobState::kRunning;
  j.attempt = 2;
  j.restarts_used = 1;
  j.error = "rank 1 exited with code 1";
  j.submit_us = 10;
  j.start_us = 20;
  j.last_step = 41;
  j.plan_json = R"({"strategy":"full_shard"})";
  j.knobs.device = DeviceKind::kCuda;
  j.knobs.threads = 3;
  j.knobs.heartbeat_timeout_s = 7.5;
  j.knobs.stop_grace_s = 2;
  j.knobs.checkpoint_dir = "/ckpt";
  return j;
}

Event MakeEvent(const std::string& job, int64_t seq, EventKind kind, const std::string& body) {
  Event e;
  e.job_id = job;
  e.seq = seq;
  e.time_us = 100 + seq;
  e.attempt = 1;
  e.rank = 0;
  e.kind = kind;
  e.body_json = body;
  return e;
}

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

// Runs `sql` on the database file through a connection of its own: SQLite lets any column hold
// any value, which is what damage to a row looks like once it is read.
void RunSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg << " in " << sql;
}

// Runs `sql` with the jobs table's NOT NULL constraints lifted, then puts them back: the file
// then holds NULLs where the schema forbids them, as a flipped type byte would leave it.
void RunSqlIgnoringNotNull(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE name = 'jobs'", -1, &st,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  const std::string schema(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  sqlite3_close(db);
  auto quoted = [](const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  };
  RunSql(path, "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql, ' NOT NULL', "
               "'') WHERE name = 'jobs';");
  RunSql(path, sql);
  RunSql(path, "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = " + quoted(schema) +
                   " WHERE name = 'jobs';");
}

JobRecord NumberedJob(int n, JobState state) {
  JobRecord j = SampleJob();
  j.id = "job-" + std::to_string(n);
  j.number = n;
  j.state = state;
  j.spec_json = R"({"train":{"steps":2},"resources":{"num_processes":1}})";
  return j;
}

// A new database at `path` holding job-1 and job-2, both SUCCEEDED.
void StoreTwoEndedJobs(const std::string& path) {
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  for (int n = 1; n <= 2; ++n) {
    JobRecord job = NumberedJob(n, JobState::kSucceeded);
    ASSERT_TRUE((*store)->PutJob(job).ok());
  }
}

const JobRecord* Find(const std::vector<JobRecord>& jobs, const std::string& id) {
  for (const JobRecord& j : jobs) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

TEST(StateStoreTest, SpecChecksumIsCrc32c) {
  EXPECT_EQ(SpecChecksum("123456789"), 0xE3069283u);
}

// Issue 28: one damaged row (a NULL, a value of the wrong type, an unknown state, a spec that
// is not JSON) refused the whole database or stopped acceld, naming neither the file nor the
// row. Every sound row loads; each damaged one is quarantined and its job FAILED, naming the
// file, the table, the row and the job; a row that cannot name its job is set aside by row id.
TEST(StateStoreTest, DamagedRowsAreQuarantinedAndTheRestLoad) {
  const std::string path = FreshTestDir() + "/state.db";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int n = 1; n <= 7; ++n) {
      JobRecord job = NumberedJob(n, n == 1 ? JobState::kSucceeded : JobState::kQueued);
      ASSERT_TRUE((*store)->Write(&job, {MakeEvent(job.id, 1, EventKind::kState, "{}")}).ok());
    }
  }
  const std::string bad_spec = R"({"train": {"steps": )";
  RunSql(path, "UPDATE jobs SET spec_json = '" + bad_spec + "', spec_crc32c = " +
                   std::to_string(SpecChecksum(bad_spec)) + " WHERE id = 'job-2';" +
                   "UPDATE jobs SET slots = 'many' WHERE id = 'job-3';" +
                   "UPDATE jobs SET id = X'FF00' WHERE id = 'job-6';" +
                   "UPDATE jobs SET state = 'RUNNNING' WHERE id = 'job-7';");
  RunSqlIgnoringNotNull(path, "UPDATE jobs SET name = NULL WHERE id = 'job-4';");

  auto store = StateStore::Open(path);  // quick_check's "NULL value in jobs.name" is a row's
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 6u);  // job-6's row cannot say which job it is
  EXPECT_EQ(Find(*jobs, "job-6"), nullptr);
  for (const char* sound : {"job-1", "job-5"}) {
    const JobRecord* j = Find(*jobs, sound);
    ASSERT_NE(j, nullptr) << sound;
    EXPECT_EQ(j->error, "rank 1 exited with code 1") << sound;
    EXPECT_EQ(j->spec_json, NumberedJob(1, JobState::kQueued).spec_json);
  }
  EXPECT_EQ(Find(*jobs, "job-1")->state, JobState::kSucceeded);
  EXPECT_EQ(Find(*jobs, "job-5")->state, JobState::kQueued);
  const std::pair<const char*, const char*> damaged[] = {
      {"job-2", "spec_json is not a JSON object"},
      {"job-3", "column slots holds text, not an integer"},
      {"job-4", "column name is NULL"},
      {"job-7", "column state: "}};
  for (const auto& [id, what] : damaged) {
    const JobRecord* j = Find(*jobs, id);
    ASSERT_NE(j, nullptr) << id;
    EXPECT_EQ(j->state, JobState::kFailed) << id;
    EXPECT_THAT(j->error, ::testing::HasSubstr(absl::StrCat("stored record damaged: ", path,
                                                            ", table jobs, row ")));
    EXPECT_THAT(j->error, ::testing::HasSubstr(absl::StrCat(" (", id, "): ", what)));
    EXPECT_GT(j->end_us, 0) << id;
    // The FAILED state is an event after the job's own, saying the same.
    auto last = (*store)->LastEventOfKind(id, EventKind::kState);
    ASSERT_TRUE(last.ok() && last->has_value()) << id;
    EXPECT_EQ((*last)->seq, 2) << id;
    EXPECT_THAT((*last)->body_json, ::testing::HasSubstr("FAILED"));
    EXPECT_THAT((*last)->body_json, ::testing::HasSubstr(what));
  }
  EXPECT_EQ(Find(*jobs, "job-2")->spec_json, "{}");  // the damaged bytes are not served
  EXPECT_EQ(Find(*jobs, "job-3")->slots, 1);

  auto quarantined = (*store)->ListQuarantined();
  ASSERT_TRUE(quarantined.ok()) << quarantined.status();
  ASSERT_EQ(quarantined->size(), 5u);
  int unnamed = 0;
  for (const StateStore::QuarantinedRow& q : *quarantined) {
    EXPECT_EQ(q.table, "jobs");
    EXPECT_GT(q.row_id, 0);
    if (q.job_id.empty()) {
      ++unnamed;
      EXPECT_THAT(q.row_sql, ::testing::StartsWith("X'FF00',6,"));
      EXPECT_THAT(q.reason, ::testing::HasSubstr("column id holds a blob, not text"));
    }
    if (q.job_id == "job-2") {
      EXPECT_THAT(q.row_sql, ::testing::HasSubstr(bad_spec));
    } else if (q.job_id == "job-3") {
      EXPECT_THAT(q.row_sql, ::testing::HasSubstr(",'many',"));
    } else if (q.job_id == "job-4") {
      EXPECT_THAT(q.row_sql, ::testing::StartsWith("'job-4',4,NULL,"));
    }
  }
  EXPECT_EQ(unnamed, 1);

  // Rewritten as FAILED, the rows are sound: a second start quarantines nothing more.
  store->reset();
  store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto again = (*store)->LoadJobs();
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), 6u);
  EXPECT_EQ(Find(*again, "job-3")->error, Find(*jobs, "job-3")->error);
  EXPECT_EQ((*store)->ListQuarantined()->size(), 5u);
}

// Issue 28: a flipped bit in an ended job's stored spec ("steps": 2 → 0) loaded silently and
// showed "step 2/0". The CRC-32C beside the spec catches it; the job is quarantined as above.
TEST(StateStoreTest, ABitFlipInAStoredSpecIsCaughtByItsChecksum) {
  const std::string path = FreshTestDir() + "/state.db";
  StoreTwoEndedJobs(path);
  // '2' (0x32) → '0' (0x30): one bit.
  RunSql(path, R"(UPDATE jobs SET spec_json = replace(spec_json, '"steps":2', '"steps":0')
                  WHERE id = 'job-1';)");
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  const JobRecord& flipped = (*jobs)[0];
  EXPECT_EQ(flipped.id, "job-1");
  EXPECT_EQ(flipped.state, JobState::kFailed);
  EXPECT_THAT(flipped.error,
              ::testing::AllOf(::testing::HasSubstr(path + ", table jobs, row 1 (job-1)"),
                               ::testing::HasSubstr("spec_json does not match its checksum")));
  EXPECT_EQ(flipped.spec_json, "{}");
  EXPECT_EQ((*jobs)[1].state, JobState::kSucceeded);
  EXPECT_EQ((*jobs)[1].spec_json, NumberedJob(2, JobState::kSucceeded).spec_json);
  auto quarantined = (*store)->ListQuarantined();
  ASSERT_TRUE(quarantined.ok());
  ASSERT_EQ(quarantined->size(), 1u);
  EXPECT_THAT((*quarantined)[0].row_sql, ::testing::HasSubstr(R"("steps":0)"));
}

// A database of schema version 4 (no checksums) gets one per stored spec on first open, so a
// later flip is caught there too.
TEST(StateStoreTest, MigratesAVersionFourDatabaseComputingSpecChecksums) {
  const std::string path = FreshTestDir() + "/state.db";
  StoreTwoEndedJobs(path);
  RunSql(path,
         "ALTER TABLE jobs DROP COLUMN spec_crc32c; DROP TABLE quarantine; "
         "PRAGMA user_version=4;");
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto jobs = (*store)->LoadJobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    ASSERT_EQ(jobs->size(), 2u);
    EXPECT_EQ((*jobs)[0].state, JobState::kSucceeded);
    EXPECT_EQ((*jobs)[1].state, JobState::kSucceeded);
    EXPECT_TRUE((*store)->ListQuarantined()->empty());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT spec_json, spec_crc32c FROM jobs", -1, &st, nullptr),
            SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const std::string spec(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    EXPECT_EQ(sqlite3_column_int64(st, 1), static_cast<int64_t>(SpecChecksum(spec)));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  RunSql(path, R"(UPDATE jobs SET spec_json = replace(spec_json, '"num_processes":1',
                  '"num_processes":0') WHERE id = 'job-2';)");
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].state, JobState::kSucceeded);
  EXPECT_EQ((*jobs)[1].state, JobState::kFailed);
  EXPECT_THAT((*jobs)[1].error, ::testing::HasSubstr("(job-2): spec_json does not match"));
}

}  // namespace
}  // namespace accel::server
