// Loading the jobs table, row by row: every sound row becomes a JobRecord; a damaged one is
// quarantined (state_store.h) so that one bad row never stops acceld (issue 28). A row is
// damaged when a column holds NULL or a value of another storage class than the one we write
// (SQLite's columns take any value, and a flipped bit can change a value's type byte), when a
// state, device or launcher_settings does not parse, or when spec_json is not a JSON object or
// no longer matches its CRC-32C, or when its training_plan does not decode (PlanHooks::check).
// A row from before plans (schema < 6) of a job that may still run gets its plan here, once
// (PlanHooks::fill).
#include <sqlite3.h>

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/sqlite_stmt.h"
#include "server/core/state_store.h"

namespace accel::server {
namespace {

enum class Kind { kText, kInt, kInt32, kReal, kBlob };
struct Column {
  const char* name;
  Kind kind;
};
// The jobs table's columns, in the order LoadJobs selects them (after the rowid).
constexpr Column kJobColumns[] = {
    {"id", Kind::kText},           {"number", Kind::kInt},
    {"name", Kind::kText},         {"spec_json", Kind::kText},
    {"slots", Kind::kInt32},       {"priority", Kind::kInt32},
    {"max_restarts", Kind::kInt32}, {"state", Kind::kText},
    {"attempt", Kind::kInt32},     {"restarts_used", Kind::kInt32},
    {"error", Kind::kText},        {"submit_us", Kind::kInt},
    {"start_us", Kind::kInt},      {"end_us", Kind::kInt},
    {"last_step", Kind::kInt},     {"plan_json", Kind::kText},
    {"device", Kind::kText},       {"threads", Kind::kInt32},
    {"heartbeat_timeout_s", Kind::kReal}, {"stop_grace_s", Kind::kReal},
    {"checkpoint_dir", Kind::kText}, {"launcher", Kind::kText},
    {"nodes", Kind::kInt32},       {"placement", Kind::kText},
    {"launcher_settings", Kind::kText}, {"spec_crc32c", Kind::kInt},
    {"training_plan", Kind::kBlob},
};
constexpr int kNumJobColumns = sizeof(kJobColumns) / sizeof(kJobColumns[0]);

const char* TypeName(int type) {
  switch (type) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "a blob";
    default: return "NULL";
  }
}

// What is wrong with column `c` (statement column c + 1), or "" when its value is sound.
std::string ColumnProblem(Stmt& st, int c) {
  const Column& col = kJobColumns[c];
  const int type = sqlite3_column_type(st.get(), c + 1);
  if (type == SQLITE_NULL) return absl::StrCat("column ", col.name, " is NULL");
  const bool ok = col.kind == Kind::kText   ? type == SQLITE_TEXT
                  : col.kind == Kind::kBlob ? type == SQLITE_BLOB
                  : col.kind == Kind::kReal ? type == SQLITE_FLOAT || type == SQLITE_INTEGER
                                            : type == SQLITE_INTEGER;
  const char* want = col.kind == Kind::kText   ? "text"
                     : col.kind == Kind::kBlob ? "a blob"
                     : col.kind == Kind::kReal ? "a real"
                                               : "an integer";
  if (!ok) return absl::StrCat("column ", col.name, " holds ", TypeName(type), ", not ", want);
  if (col.kind == Kind::kInt32) {
    const int64_t v = st.ColInt(c + 1);
    if (v < INT_MIN || v > INT_MAX) {
      return absl::StrCat("column ", col.name, " holds ", v, ", beyond a 32-bit integer");
    }
  }
  return "";
}

// The row's values as SQL literals (quote()), for the quarantine table.
std::string RowSqlExpression() {
  std::vector<std::string> parts;
  for (const Column& c : kJobColumns) parts.push_back(absl::StrCat("quote(", c.name, ")"));
  return absl::StrJoin(parts, " || ',' || ");
}

std::string SelectColumns() {
  std::vector<std::string> names;
  for (const Column& c : kJobColumns) names.push_back(c.name);
  return absl::StrJoin(names, ", ");
}

// One row read leniently (a damaged column leaves its default), with what was damaged.
struct LoadedRow {
  int64_t row_id = 0;
  JobRecord job;
  std::vector<std::string> problems;
  bool identified = false;  // id and number are sound: the job can be kept, FAILED
  bool spec_damaged = false;
};

LoadedRow ReadRow(Stmt& st, const PlanHooks& hooks) {
  LoadedRow r;
  r.row_id = st.ColInt(0);
  bool sound[kNumJobColumns];
  for (int c = 0; c < kNumJobColumns; ++c) {
    std::string problem = ColumnProblem(st, c);
    sound[c] = problem.empty();
    if (!sound[c]) r.problems.push_back(std::move(problem));
  }
  JobRecord& j = r.job;
  auto text = [&](int c, std::string* out) {
    if (sound[c]) *out = st.ColText(c + 1);
  };
  auto int32 = [&](int c, int* out) {
    if (sound[c]) *out = static_cast<int>(st.ColInt(c + 1));
  };
  auto int64 = [&](int c, int64_t* out) {
    if (sound[c]) *out = st.ColInt(c + 1);
  };
  text(0, &j.id);
  int64(1, &j.number);
  r.identified = sound[0] && sound[1] && !j.id.empty();
  text(2, &j.name);
  text(3, &j.spec_json);
  int32(4, &j.slots);
  int32(5, &j.priority);
  int32(6, &j.max_restarts);
  if (sound[7]) {
    absl::StatusOr<JobState> state = ParseJobState(st.ColText(8));
    if (state.ok()) {
      j.state = *state;
    } else {
      r.problems.push_back(absl::StrCat("column state: ", state.status().message()));
    }
  }
  int32(8, &j.attempt);
  int32(9, &j.restarts_used);
  text(10, &j.error);
  int64(11, &j.submit_us);
  int64(12, &j.start_us);
  int64(13, &j.end_us);
  int64(14, &j.last_step);
  text(15, &j.plan_json);
  if (sound[16]) {
    absl::StatusOr<DeviceKind> device = ParseDeviceKind(st.ColText(17));
    if (device.ok()) {
      j.knobs.device = *device;
    } else {
      r.problems.push_back(absl::StrCat("column device: ", device.status().message()));
    }
  }
  int32(17, &j.knobs.threads);
  if (sound[18]) j.knobs.heartbeat_timeout_s = st.ColReal(19);
  if (sound[19]) j.knobs.stop_grace_s = st.ColReal(20);
  text(20, &j.knobs.checkpoint_dir);
  text(21, &j.knobs.launcher);
  int32(22, &j.knobs.nodes);
  text(23, &j.placement);
  if (sound[24]) {
    const nlohmann::json settings =
        nlohmann::json::parse(st.ColText(25), nullptr, /*allow_exceptions=*/false);
    if (!settings.is_object()) {
      r.problems.push_back("column launcher_settings is not a JSON object");
    } else {
      for (const auto& [k, v] : settings.items()) {
        if (v.is_string()) j.knobs.launcher_settings[k] = v.get<std::string>();
      }
    }
  }
  // The spec: present, the bytes that were written (its checksum), and a JSON object.
  r.spec_damaged = !sound[3];
  if (sound[3] && sound[25]) {
    const int64_t stored = st.ColInt(26);
    const uint32_t actual = SpecChecksum(j.spec_json);
    if (stored != static_cast<int64_t>(actual)) {
      r.spec_damaged = true;
      r.problems.push_back(absl::StrFormat(
          "spec_json does not match its checksum (stored CRC-32C 0x%08x, computed 0x%08x)",
          static_cast<uint32_t>(stored), actual));
    }
  }
  if (sound[3] && !r.spec_damaged &&
      !nlohmann::json::parse(j.spec_json, nullptr, /*allow_exceptions=*/false).is_object()) {
    r.spec_damaged = true;
    r.problems.push_back("spec_json is not a JSON object (stored job spec is not readable)");
  }
  if (sound[26]) {
    j.training_plan = st.ColBlob(27);
    if (!j.training_plan.empty() && hooks.check) {
      if (std::string problem = hooks.check(j.training_plan); !problem.empty()) {
        r.problems.push_back(absl::StrCat("column training_plan: ", problem));
      }
    }
  }
  return r;
}

}  // namespace

absl::StatusOr<std::vector<JobRecord>> StateStore::LoadJobs() {
  absl::MutexLock lock(&mu_);
  std::vector<LoadedRow> rows;
  {
    const std::string sql =
        absl::StrCat("SELECT rowid, ", SelectColumns(), " FROM jobs ORDER BY number, rowid");
    Stmt st(db_, sql.c_str());
    if (!st.ok()) return Error("prepare load jobs");
    int rc;
    while ((rc = st.Step()) == SQLITE_ROW) rows.push_back(ReadRow(st, plan_hooks_));
    if (rc != SQLITE_DONE) return Error("load jobs");
  }
  std::vector<JobRecord> jobs;
  jobs.reserve(rows.size());
  for (LoadedRow& r : rows) {
    if (r.problems.empty() && r.job.training_plan.empty() && !IsTerminal(r.job.state) &&
        plan_hooks_.fill) {
      ACCEL_RETURN_IF_ERROR(FillPlan(r.job, &r.problems));
    }
    if (r.problems.empty()) {
      jobs.push_back(std::move(r.job));
      continue;
    }
    const std::string where =
        absl::StrCat(path_, ", table jobs, row ", r.row_id,
                     r.identified ? absl::StrCat(" (", r.job.id, ")") : std::string());
    const std::string what = absl::StrJoin(r.problems, "; ");
    JobRecord* keep = nullptr;
    if (r.identified) {
      JobRecord& j = r.job;
      j.state = JobState::kFailed;
      j.error = absl::StrCat("stored record damaged: ", where, ": ", what,
                             "; the row as it was is in the table quarantine");
      // The damaged spec is not served (its bytes are in the quarantine table).
      if (r.spec_damaged) j.spec_json = "{}";
      if (j.end_us == 0) j.end_us = absl::ToUnixMicros(absl::Now());
      keep = &j;
    }
    ACCEL_LOG(error, "state database {}, table jobs, row {}{}: {}; {}", path_, r.row_id,
              r.identified ? absl::StrCat(" (", r.job.id, ")") : std::string(), what,
              r.identified ? "the job is marked FAILED; the row as it was is in table quarantine"
                           : "the row cannot name its job and was moved to table quarantine");
    ACCEL_RETURN_IF_ERROR(Quarantine(r.row_id, keep, what));
    if (keep != nullptr) jobs.push_back(std::move(*keep));
  }
  return jobs;
}

absl::Status StateStore::FillPlan(JobRecord& job, std::vector<std::string>* problems) {
  absl::StatusOr<std::string> plan = plan_hooks_.fill(job);
  if (plan.ok()) {
    job.training_plan = *std::move(plan);
    ACCEL_LOG(info, "state database {}: {} was stored before typed plans; its spec lowered to one",
              path_, job.id);
    return InTransaction([&]() -> absl::Status { return WriteJobRow(job); });
  }
  problems->push_back(
      absl::StrCat("training_plan: the job was stored before typed plans and its spec no longer "
                   "lowers: ", plan.status().message()));
  return absl::OkStatus();
}

absl::Status StateStore::Quarantine(int64_t row_id, const JobRecord* keep,
                                    const std::string& reason) {
  return InTransaction([&]() -> absl::Status {
    const std::string copy = absl::StrCat(
        "INSERT INTO quarantine (table_name, row_id, job_id, reason, time_us, row_sql) "
        "SELECT 'jobs', rowid, ?, ?, ?, ",
        RowSqlExpression(), " FROM jobs WHERE rowid = ?");
    Stmt st(db_, copy.c_str());
    if (!st.ok()) return Error("prepare quarantine");
    st.Text(1, keep != nullptr ? keep->id : std::string());
    st.Text(2, reason);
    st.Int(3, absl::ToUnixMicros(absl::Now()));
    st.Int(4, row_id);
    if (st.Step() != SQLITE_DONE) return Error("quarantine row");
    Stmt drop(db_, "DELETE FROM jobs WHERE rowid = ?");
    if (!drop.ok()) return Error("prepare quarantine delete");
    drop.Int(1, row_id);
    if (drop.Step() != SQLITE_DONE) return Error("quarantine delete");
    if (keep == nullptr) return absl::OkStatus();
    ACCEL_RETURN_IF_ERROR(WriteJobRow(*keep));
    // The FAILED state's event, after the job's last one.
    nlohmann::json body;
    body["state"] = JobStateName(JobState::kFailed);
    body["message"] = keep->error;
    Stmt event(db_,
               "INSERT INTO events (job_id, seq, time_us, attempt, rank, kind, body) "
               "SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, 0, ?, ? FROM events WHERE job_id = ?");
    if (!event.ok()) return Error("prepare quarantine event");
    event.Text(1, keep->id);
    event.Int(2, keep->end_us);
    event.Int(3, keep->attempt);
    event.Text(4, EventKindName(EventKind::kState));
    event.Text(5, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    event.Text(6, keep->id);
    if (event.Step() != SQLITE_DONE) return Error("quarantine event");
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<StateStore::QuarantinedRow>> StateStore::ListQuarantined() {
  absl::MutexLock lock(&mu_);
  Stmt st(db_,
          "SELECT table_name, row_id, job_id, reason, row_sql FROM quarantine "
          "ORDER BY time_us, rowid");
  if (!st.ok()) return Error("prepare list quarantine");
  std::vector<QuarantinedRow> out;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    out.push_back({st.ColText(0), st.ColInt(1), st.ColText(2), st.ColText(3), st.ColText(4)});
  }
  if (rc != SQLITE_DONE) return Error("list quarantine");
  return out;
}

}  // namespace accel::server
