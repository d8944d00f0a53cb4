// A damaged state.db: rows quarantined and named while the rest loads, the CRC-32C of every
// stored spec, and the migration that computes it for older databases (issue 28).
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/state_store.h"
#include "server/core/state_store_test_util.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

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
         "ALTER TABLE jobs DROP COLUMN training_plan; "
         "ALTER TABLE checkpoints DROP COLUMN eval_loss; PRAGMA user_version=4;");
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

// A database of schema version 5 (no plans, issue 29): each job that may still run gets its plan
// by lowering its stored spec once at load, written back; one whose spec no longer lowers is
// quarantined with the reason; an ended job is left as it was (it never runs again).
TEST(StateStoreTest, MigratesAVersionFiveDatabaseLoweringEachRunnableSpecOnce) {
  const std::string path = FreshTestDir() + "/state.db";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int n = 1; n <= 3; ++n) {
      JobRecord job = NumberedJob(n, n == 1 ? JobState::kSucceeded : JobState::kQueued);
      if (n == 3) job.spec_json = R"({"model":{"preset":"gpt5"}})";
      ASSERT_TRUE((*store)->PutJob(job).ok());
    }
  }
  RunSql(path, "ALTER TABLE jobs DROP COLUMN training_plan; "
         "ALTER TABLE checkpoints DROP COLUMN eval_loss; PRAGMA user_version=5;");
  int fills = 0;
  PlanHooks hooks;
  hooks.fill = [&fills](const JobRecord& job) -> absl::StatusOr<std::string> {
    ++fills;
    if (absl::StrContains(job.spec_json, "gpt5")) {
      return absl::InvalidArgumentError("model.preset: unknown preset gpt5");
    }
    return "plan of " + job.id;
  };
  hooks.check = [](const std::string& plan) -> std::string {
    return absl::StartsWith(plan, "plan of ") ? "" : "does not decode";
  };
  for (int open = 0; open < 2; ++open) {
    auto store = StateStore::Open(path, hooks);
    ASSERT_TRUE(store.ok()) << store.status();
    auto jobs = (*store)->LoadJobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    ASSERT_EQ(jobs->size(), 3u);
    EXPECT_EQ(Find(*jobs, "job-1")->state, JobState::kSucceeded);
    EXPECT_EQ(Find(*jobs, "job-1")->training_plan, "");  // ended: not lowered
    EXPECT_EQ(Find(*jobs, "job-2")->state, JobState::kQueued);
    EXPECT_EQ(Find(*jobs, "job-2")->training_plan, "plan of job-2");
    EXPECT_EQ(Find(*jobs, "job-3")->state, JobState::kFailed);
    EXPECT_THAT(Find(*jobs, "job-3")->error,
                ::testing::HasSubstr("(job-3): training_plan: the job was stored before typed "
                                     "plans and its spec no longer lowers: model.preset: unknown "
                                     "preset gpt5"));
    auto quarantined = (*store)->ListQuarantined();
    ASSERT_TRUE(quarantined.ok());
    ASSERT_EQ(quarantined->size(), 1u);
    EXPECT_EQ((*quarantined)[0].job_id, "job-3");
    // Once: the second open finds job-2's plan stored and job-3 ended.
    EXPECT_EQ(fills, 2);
  }
}

// A database of schema version 6 gets the checkpoints' eval_loss column; its checkpoints read
// back as not evaluated.
TEST(StateStoreTest, MigratesAVersionSixDatabaseAddingTheCheckpointsEvalLoss) {
  const std::string path = FreshTestDir() + "/state.db";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    JobRecord job = SampleJob();
    ASSERT_TRUE((*store)->Write(&job, {}).ok());
    ASSERT_TRUE((*store)->AddCheckpoint({"job-7", 1, 10, "/ckpt/step_10", "sharded", 1, 0.1, 5})
                    .ok());
  }
  RunSql(path, "ALTER TABLE checkpoints DROP COLUMN eval_loss; PRAGMA user_version=6;");
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto ckpts = (*store)->ListCheckpoints("job-7");
  ASSERT_TRUE(ckpts.ok()) << ckpts.status();
  ASSERT_EQ(ckpts->size(), 1u);
  EXPECT_EQ((*ckpts)[0].path, "/ckpt/step_10");
  EXPECT_FALSE((*ckpts)[0].eval_loss.has_value());
  CheckpointRecord evaluated{"job-7", 1, 20, "/ckpt/step_20", "sharded", 1, 0.1, 6};
  evaluated.eval_loss = 1.5;
  ASSERT_TRUE((*store)->AddCheckpoint(evaluated).ok());
  ckpts = (*store)->ListCheckpoints("job-7");
  ASSERT_TRUE(ckpts.ok());
  ASSERT_EQ(ckpts->size(), 2u);
  EXPECT_EQ((*ckpts)[1].eval_loss, 1.5);
}

TEST(StateStoreTest, AStoredPlanThatDoesNotDecodeIsQuarantined) {
  const std::string path = FreshTestDir() + "/state.db";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int n = 1; n <= 2; ++n) {
      JobRecord job = NumberedJob(n, JobState::kQueued);
      job.training_plan = n == 1 ? "plan of job-1" : std::string("\xff\x00garbage", 9);
      ASSERT_TRUE((*store)->PutJob(job).ok());
    }
  }
  PlanHooks hooks;
  hooks.check = [](const std::string& plan) -> std::string {
    return absl::StartsWith(plan, "plan of ") ? "" : "does not decode";
  };
  auto store = StateStore::Open(path, hooks);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ(Find(*jobs, "job-1")->state, JobState::kQueued);
  EXPECT_EQ(Find(*jobs, "job-1")->training_plan, "plan of job-1");
  EXPECT_EQ(Find(*jobs, "job-2")->state, JobState::kFailed);
  EXPECT_THAT(Find(*jobs, "job-2")->error,
              ::testing::HasSubstr("(job-2): column training_plan: does not decode"));
}

}  // namespace
}  // namespace accel::server
