// The StateStore's per-job records beside the job row (attempts, checkpoints), the job counter,
// and deleting a job with everything it owns.
#include <sqlite3.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "server/core/sqlite_stmt.h"
#include "server/core/state_store.h"

namespace accel::server {

absl::Status StateStore::PutAttempt(const AttemptRecord& a) {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "INSERT OR REPLACE INTO attempts (job_id, attempt, start_us, end_us, outcome, "
          "placement) VALUES (?,?,?,?,?,?)");
  if (!st.ok()) return Error("prepare attempt");
  st.Text(1, a.job_id);
  st.Int(2, a.attempt);
  st.Int(3, a.start_us);
  st.Int(4, a.end_us);
  st.Text(5, a.outcome);
  st.Text(6, a.placement);
  if (st.Step() != SQLITE_DONE) return Error("write attempt");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AttemptRecord>> StateStore::ListAttempts(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "SELECT attempt, start_us, end_us, outcome, placement FROM attempts WHERE job_id = ? "
          "ORDER BY attempt");
  if (!st.ok()) return Error("prepare list attempts");
  st.Text(1, job_id);
  std::vector<AttemptRecord> out;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    out.push_back({job_id, static_cast<int>(st.ColInt(0)), st.ColInt(1), st.ColInt(2),
                   st.ColText(3), st.ColText(4)});
  }
  if (rc != SQLITE_DONE) return Error("list attempts");
  return out;
}

absl::Status StateStore::AddCheckpoint(const CheckpointRecord& c) {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "INSERT INTO checkpoints (job_id, attempt, step, path, kind, bytes, seconds, time_us, "
          "eval_loss) VALUES (?,?,?,?,?,?,?,?,?)");
  if (!st.ok()) return Error("prepare checkpoint");
  st.Text(1, c.job_id);
  st.Int(2, c.attempt);
  st.Int(3, c.step);
  st.Text(4, c.path);
  st.Text(5, c.kind);
  st.Int(6, c.bytes);
  st.Real(7, c.seconds);
  st.Int(8, c.time_us);
  if (c.eval_loss.has_value()) st.Real(9, *c.eval_loss);  // else NULL
  if (st.Step() != SQLITE_DONE) return Error("write checkpoint");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CheckpointRecord>> StateStore::ListCheckpoints(
    const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "SELECT attempt, step, path, kind, bytes, seconds, time_us, eval_loss FROM checkpoints "
          "WHERE job_id = ? ORDER BY time_us, rowid");
  if (!st.ok()) return Error("prepare list checkpoints");
  st.Text(1, job_id);
  std::vector<CheckpointRecord> out;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    CheckpointRecord c;
    c.job_id = job_id;
    c.attempt = static_cast<int>(st.ColInt(0));
    c.step = st.ColInt(1);
    c.path = st.ColText(2);
    c.kind = st.ColText(3);
    c.bytes = st.ColInt(4);
    c.seconds = st.ColReal(5);
    c.time_us = st.ColInt(6);
    if (!st.ColNull(7)) c.eval_loss = st.ColReal(7);
    out.push_back(std::move(c));
  }
  if (rc != SQLITE_DONE) return Error("list checkpoints");
  return out;
}

absl::StatusOr<int64_t> StateStore::NextJobNumber() {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "SELECT MAX(COALESCE((SELECT value FROM meta WHERE key = 'next_job_number'), 1), "
          "COALESCE((SELECT MAX(number) + 1 FROM jobs), 1))");
  if (!st.ok()) return Error("prepare next job number");
  if (st.Step() != SQLITE_ROW) return Error("next job number");
  return st.ColInt(0);
}

absl::StatusOr<std::string> StateStore::StateId() {
  absl::MutexLock lock(&mu_);
  // The meta table (schema version 3) holds integers: a random non-negative 63-bit one.
  ACCEL_RETURN_IF_ERROR(Exec("INSERT OR IGNORE INTO meta (key, value) "
                             "VALUES ('state_id', random() & 9223372036854775807)"));
  Stmt st(db_, "SELECT value FROM meta WHERE key = 'state_id'");
  if (!st.ok()) return Error("prepare state id");
  if (st.Step() != SQLITE_ROW) return Error("state id");
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(st.ColInt(0)));
  return std::string(buf);
}

absl::Status StateStore::DeleteJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    // The counter already passed this job's number (Write keeps it ahead), so deleting the
    // newest job never hands its id to the next one.
    for (const char* sql : {"DELETE FROM events WHERE job_id = ?",
                            "DELETE FROM attempts WHERE job_id = ?",
                            "DELETE FROM checkpoints WHERE job_id = ?",
                            "DELETE FROM jobs WHERE id = ?"}) {
      Stmt st(db_, sql);
      if (!st.ok()) return Error("prepare delete job");
      st.Text(1, job_id);
      if (st.Step() != SQLITE_DONE) return Error("delete job");
    }
    if (sqlite3_changes(db_) == 0) {
      return absl::NotFoundError(absl::StrCat("no job ", job_id));
    }
    return absl::OkStatus();
  });
}

}  // namespace accel::server
