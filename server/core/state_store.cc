#include "server/core/state_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/crc32c.h"
#include "nlohmann/json.hpp"
#include "server/core/sqlite_stmt.h"

namespace accel::server {

uint32_t SpecChecksum(std::string_view spec_json) { return checkpoint::crc32c::Value(spec_json); }

namespace {

// Version 1. Events are keyed by (job_id, seq): the per-job sequence is the primary key, so a
// duplicate can never be stored and a replay is one index range scan.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY,
  number INTEGER NOT NULL UNIQUE,
  name TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  slots INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  max_restarts INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  restarts_used INTEGER NOT NULL,
  error TEXT NOT NULL,
  submit_us INTEGER NOT NULL,
  start_us INTEGER NOT NULL,
  end_us INTEGER NOT NULL,
  last_step INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  start_us INTEGER NOT NULL,
  end_us INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  PRIMARY KEY (job_id, attempt)
);
CREATE TABLE IF NOT EXISTS events (
  job_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  time_us INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  step INTEGER NOT NULL,
  path TEXT NOT NULL,
  kind TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  seconds REAL NOT NULL,
  time_us INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS checkpoints_by_job ON checkpoints (job_id, step);
)sql";

// Version 2: the typed record beside the spec (JobKnobs, the lowered plan). Rows of version 1
// get their knobs from their stored spec, once, here.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE jobs ADD COLUMN plan_json TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN device TEXT NOT NULL DEFAULT 'cpu';
ALTER TABLE jobs ADD COLUMN threads INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN heartbeat_timeout_s REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN stop_grace_s REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN checkpoint_dir TEXT NOT NULL DEFAULT '';
UPDATE jobs SET
  device = COALESCE(NULLIF(json_extract(spec_json, '$.resources.device'), ''), 'cpu'),
  threads = MAX(1, COALESCE(json_extract(spec_json, '$.resources.threads_per_process'), 1)),
  heartbeat_timeout_s = COALESCE(json_extract(spec_json, '$.heartbeat_timeout_s'), 0),
  stop_grace_s = COALESCE(json_extract(spec_json, '$.stop_grace_s'), 0),
  checkpoint_dir = COALESCE(json_extract(spec_json, '$.checkpoint.dir'), '');
)sql";

// Version 3: a job counter that survives deleting jobs, so an id is never handed out twice.
constexpr const char* kSchemaV3 = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (key, value)
  SELECT 'next_job_number', COALESCE(MAX(number), 0) + 1 FROM jobs;
)sql";

// Version 4: launchers. Where a job's ranks run (local, slurm, kubernetes, on how many nodes) and
// the cluster's name for each attempt ("slurm job 4711").
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE jobs ADD COLUMN launcher TEXT NOT NULL DEFAULT 'local';
ALTER TABLE jobs ADD COLUMN nodes INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN placement TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN launcher_settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE attempts ADD COLUMN placement TEXT NOT NULL DEFAULT '';
)sql";

// Version 5: a CRC-32C of each stored spec (a bit flip in an ended job's spec loaded silently,
// issue 28), computed here for the rows already stored; and the quarantine table, where
// LoadJobs moves damaged rows (state_store_load.cc).
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE jobs ADD COLUMN spec_crc32c INTEGER NOT NULL DEFAULT -1;
UPDATE jobs SET spec_crc32c = COALESCE(accel_crc32c(spec_json), -1);
CREATE TABLE IF NOT EXISTS quarantine (
  table_name TEXT NOT NULL,
  row_id INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  time_us INTEGER NOT NULL,
  row_sql TEXT NOT NULL
);
)sql";

// Version 6: the typed plan the job was lowered to at submit (accel.v1.TrainingPlan, serialized;
// issue 29). Rows stored before it get theirs from LoadJobs, which lowers their spec once
// (PlanHooks::fill) and writes it back.
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE jobs ADD COLUMN training_plan BLOB NOT NULL DEFAULT x'';
)sql";

// Version 7: the eval loss of the step each checkpoint saved (issue 31; NULL: not evaluated).
constexpr const char* kSchemaV7 = R"sql(
ALTER TABLE checkpoints ADD COLUMN eval_loss REAL;
)sql";

// accel_crc32c(text): the CRC-32C of the value's bytes (NULL for NULL); the migration's use only.
void Crc32cFunction(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_null(ctx);
    return;
  }
  const void* bytes = sqlite3_value_blob(argv[0]);
  const int n = sqlite3_value_bytes(argv[0]);
  sqlite3_result_int64(ctx, SpecChecksum(std::string_view(static_cast<const char*>(bytes),
                                                          static_cast<size_t>(n))));
}

// quick_check's findings about single values ("NULL value in jobs.name"), which LoadJobs deals
// with row by row, as opposed to damage to the file's structure.
bool IsRowFinding(const std::string& line) {
  return absl::StartsWith(line, "NULL value in ") || absl::StartsWith(line, "non-") ||
         absl::StartsWith(line, "CHECK constraint failed");
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path,
                                                             PlanHooks plan_hooks) {
  // A database file that exists but is empty was truncated (SQLite would take it for a new
  // one, and acceld would reuse job ids and append to the old jobs' logs): refuse it.
  struct stat st;
  if (path != ":memory:" && ::stat(path.c_str(), &st) == 0 && st.st_size == 0) {
    return absl::DataLossError(absl::StrCat(
        "state database ", path, " is empty (0 bytes): it was truncated; move it away to start "
        "with no jobs, or restore it"));
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("cannot open state database ", path, ": ", msg));
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_create_function_v2(db, "accel_crc32c", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                             Crc32cFunction, nullptr, nullptr, nullptr);
  std::unique_ptr<StateStore> store(new StateStore(db, path, std::move(plan_hooks)));
  absl::MutexLock lock(&store->mu_);
  absl::Status s = store->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  if (!s.ok()) {
    return absl::DataLossError(absl::StrCat("state database ", path, " is not usable: ",
                                            s.message()));
  }
  ACCEL_RETURN_IF_ERROR(store->Migrate());
  ACCEL_RETURN_IF_ERROR(store->QuickCheck(path));
  return store;
}

StateStore::~StateStore() {
  absl::MutexLock lock(&mu_);
  sqlite3_close(db_);
}

absl::Status StateStore::Error(const char* what) {
  return absl::InternalError(absl::StrCat("state database: ", what, ": ", sqlite3_errmsg(db_)));
}

absl::Status StateStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return absl::InternalError(absl::StrCat("state database: ", msg));
  }
  return absl::OkStatus();
}

absl::Status StateStore::InTransaction(const std::function<absl::Status()>& body) {
  ACCEL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  absl::Status s = body();
  if (!s.ok()) {
    (void)Exec("ROLLBACK");
    return s;
  }
  return Exec("COMMIT");
}

absl::Status StateStore::QuickCheck(const std::string& path) {
  Stmt check(db_, "PRAGMA quick_check");
  std::string first;
  std::vector<std::string> rows;  // findings about single values: LoadJobs's to handle
  while (check.ok() && check.Step() == SQLITE_ROW) {
    std::string line = check.ColText(0);
    if (line == "ok") return absl::OkStatus();
    if (!IsRowFinding(line)) {
      first = std::move(line);
      break;
    }
    rows.push_back(std::move(line));
  }
  if (first.empty() && !rows.empty()) {
    for (const std::string& line : rows) {
      ACCEL_LOG(warn, "state database {}: {} (the row is quarantined when it is read)", path, line);
    }
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat(
      "state database ", path, " is damaged (", first.empty() ? sqlite3_errmsg(db_) : first,
      "); restore it from a backup or move it away to start with no jobs"));
}

absl::Status StateStore::Migrate() {
  Stmt version(db_, "PRAGMA user_version");
  if (!version.ok() || version.Step() != SQLITE_ROW) {
    return absl::DataLossError(absl::StrCat("state database is not readable: ", sqlite3_errmsg(db_)));
  }
  const int64_t v = version.ColInt(0);
  if (v > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state database has schema version ", v, " but this acceld knows only up to ",
        kSchemaVersion, "; use the newer acceld or another --state-dir"));
  }
  if (v == kSchemaVersion) return absl::OkStatus();
  return InTransaction([&]() -> absl::Status {
    absl::Status s = v < 1 ? Exec(kSchemaV1) : absl::OkStatus();
    if (s.ok() && v < 2) s = Exec(kSchemaV2);
    if (s.ok() && v < 3) s = Exec(kSchemaV3);
    if (s.ok() && v < 4) s = Exec(kSchemaV4);
    if (s.ok() && v < 5) s = Exec(kSchemaV5);
    if (s.ok() && v < 6) s = Exec(kSchemaV6);
    // The checkpoints table is version 1's, but databases written before it joined that schema
    // lack it; its CREATE IF NOT EXISTS makes it before the column is added.
    if (s.ok() && v < 7 && v >= 1) s = Exec(kSchemaV1);
    if (s.ok() && v < 7) s = Exec(kSchemaV7);
    if (s.ok()) s = Exec(absl::StrCat("PRAGMA user_version=", kSchemaVersion).c_str());
    return s;
  });
}

absl::Status StateStore::WriteJobRow(const JobRecord& job) {
  Stmt st(db_,
          "INSERT OR REPLACE INTO jobs (id, number, name, spec_json, slots, priority, "
          "max_restarts, state, attempt, restarts_used, error, submit_us, start_us, end_us, "
          "last_step, plan_json, device, threads, heartbeat_timeout_s, stop_grace_s, "
          "checkpoint_dir, launcher, nodes, placement, launcher_settings, spec_crc32c, "
          "training_plan) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!st.ok()) return Error("prepare job");
  st.Text(1, job.id);
  st.Int(2, job.number);
  st.Text(3, job.name);
  st.Text(4, job.spec_json);
  st.Int(5, job.slots);
  st.Int(6, job.priority);
  st.Int(7, job.max_restarts);
  st.Text(8, std::string(JobStateName(job.state)));
  st.Int(9, job.attempt);
  st.Int(10, job.restarts_used);
  st.Text(11, job.error);
  st.Int(12, job.submit_us);
  st.Int(13, job.start_us);
  st.Int(14, job.end_us);
  st.Int(15, job.last_step);
  st.Text(16, job.plan_json);
  st.Text(17, DeviceKindName(job.knobs.device));
  st.Int(18, job.knobs.threads);
  st.Real(19, job.knobs.heartbeat_timeout_s);
  st.Real(20, job.knobs.stop_grace_s);
  st.Text(21, job.knobs.checkpoint_dir);
  st.Text(22, job.knobs.launcher);
  st.Int(23, job.knobs.nodes);
  st.Text(24, job.placement);
  st.Text(25, nlohmann::json(job.knobs.launcher_settings).dump());
  st.Int(26, SpecChecksum(job.spec_json));
  st.Blob(27, job.training_plan);
  if (st.Step() != SQLITE_DONE) return Error("write job");
  return absl::OkStatus();
}

absl::Status StateStore::Write(const JobRecord* job, const std::vector<Event>& events) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    if (job != nullptr) {
      ACCEL_RETURN_IF_ERROR(WriteJobRow(*job));
      Stmt counter(db_,
                   "UPDATE meta SET value = MAX(value, ?) WHERE key = 'next_job_number'");
      if (!counter.ok()) return Error("prepare job counter");
      counter.Int(1, job->number + 1);
      if (counter.Step() != SQLITE_DONE) return Error("write job counter");
    }
    if (!events.empty()) {
      Stmt st(db_,
              "INSERT INTO events (job_id, seq, time_us, attempt, rank, kind, body) "
              "VALUES (?,?,?,?,?,?,?)");
      if (!st.ok()) return Error("prepare event");
      for (const Event& e : events) {
        sqlite3_reset(st.get());
        st.Text(1, e.job_id);
        st.Int(2, e.seq);
        st.Int(3, e.time_us);
        st.Int(4, e.attempt);
        st.Int(5, e.rank);
        st.Text(6, std::string(EventKindName(e.kind)));
        st.Text(7, e.body_json);
        if (st.Step() != SQLITE_DONE) return Error("append event");
      }
    }
    return absl::OkStatus();
  });
}

namespace {
// One row of `SELECT seq, time_us, attempt, rank, kind, body FROM events`.
absl::StatusOr<Event> EventFromRow(Stmt& st, const std::string& job_id) {
  Event e;
  e.job_id = job_id;
  e.seq = st.ColInt(0);
  e.time_us = st.ColInt(1);
  e.attempt = static_cast<int>(st.ColInt(2));
  e.rank = static_cast<int>(st.ColInt(3));
  absl::StatusOr<EventKind> kind = ParseEventKind(st.ColText(4));
  if (!kind.ok()) {
    return absl::DataLossError(absl::StrCat("state database: event ", job_id, "#", e.seq, ": ",
                                            kind.status().message()));
  }
  e.kind = *kind;
  e.body_json = st.ColText(5);
  return e;
}
}  // namespace

absl::StatusOr<std::vector<Event>> StateStore::ReadEvents(const std::string& job_id,
                                                          int64_t after_seq, int64_t limit) {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "SELECT seq, time_us, attempt, rank, kind, body FROM events "
          "WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?");
  if (!st.ok()) return Error("prepare read events");
  st.Text(1, job_id);
  st.Int(2, after_seq);
  st.Int(3, limit);
  std::vector<Event> events;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    absl::StatusOr<Event> e = EventFromRow(st, job_id);
    if (!e.ok()) return e.status();
    events.push_back(*std::move(e));
  }
  if (rc != SQLITE_DONE) return Error("read events");
  return events;
}

absl::StatusOr<std::optional<Event>> StateStore::LastEventOfKind(const std::string& job_id,
                                                                 EventKind kind) {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "SELECT seq, time_us, attempt, rank, kind, body FROM events "
          "WHERE job_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1");
  if (!st.ok()) return Error("prepare read last event");
  st.Text(1, job_id);
  st.Text(2, EventKindName(kind));
  const int rc = st.Step();
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) return Error("read last event");
  ACCEL_ASSIGN_OR_RETURN(Event e, EventFromRow(st, job_id));
  return e;
}

absl::StatusOr<int64_t> StateStore::LastSeq(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  Stmt st(db_, "SELECT COALESCE(MAX(seq), 0) FROM events WHERE job_id = ?");
  if (!st.ok()) return Error("prepare last seq");
  st.Text(1, job_id);
  if (st.Step() != SQLITE_ROW) return Error("last seq");
  return st.ColInt(0);
}

}  // namespace accel::server
