// StateStore: acceld's durable state in one SQLite database (WAL journal): jobs, attempts,
// events and checkpoint records. Every write is one transaction that has committed when the call
// returns, so whatever a client was told (a job id, a state, an event) survives acceld being
// killed. synchronous=NORMAL: a committed transaction survives a process crash; a power loss may
// drop the newest ones (synchronous=FULL would fsync every commit). docs/rpc.md §State has the
// schema.
//
// The schema is versioned with PRAGMA user_version (kSchemaVersion); a database written by a
// newer acceld is refused (FailedPrecondition) rather than misread.
//
// Damage (issue 28): a database whose structure is damaged (pages, indexes: PRAGMA quick_check)
// is refused at open, naming the file. A damaged job row is not: LoadJobs loads every sound row
// and quarantines each damaged one (a NULL or a value of the wrong type in a column, an unknown
// state or device, a spec that is not a JSON object or no longer matches the CRC-32C stored
// beside it): the row as it was goes to the `quarantine` table, the job comes back FAILED with
// the error "stored record damaged: FILE, table jobs, row N (job-K): WHAT" (stored, with a state
// event), and acceld's log says the same. A row too damaged to name its job (id or number) is
// moved to the quarantine table and named by its row id. docs/rpc.md §State has the schema.
//
// Typed plans (schema 6, issue 29): each job row holds the accel.v1.TrainingPlan acceld lowered
// it to at submit (training_plan, a blob). The store does not know the proto: PlanHooks check a
// stored plan (one that does not decode is damage, as above) and fill the plan of a job stored
// before plans, once, by lowering its stored spec.
// Thread-safe: one connection behind a mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/types.h"

struct sqlite3;

namespace accel::server {

inline constexpr int kSchemaVersion = 7;

// What LoadJobs does with each job's training_plan (schema version 6). The server core does not
// know the plan's proto: acceld passes its own (server/services/convert.h AcceldPlanHooks); without hooks
// a plan is loaded as stored and none is filled.
struct PlanHooks {
  // The problem with a stored plan ("" when it decodes): such a row is quarantined.
  std::function<std::string(const std::string& training_plan)> check;
  // A job stored before plans existed (an empty training_plan) that may still run (not ended):
  // its plan, from lowering its stored spec once. The plan is written back; when the lowering
  // fails the row is quarantined (the job FAILED, naming the reason), so either way it happens
  // once per job. An ended job is not lowered: it never runs again, and shows its old plan_json.
  std::function<absl::StatusOr<std::string>(const JobRecord& job)> fill;
};

// The checksum stored beside each job's spec_json (column spec_crc32c): CRC-32C of its bytes.
uint32_t SpecChecksum(std::string_view spec_json);

class StateStore {
 public:
  // Opens or creates the database at `path` (":memory:" for tests). Errors: Unavailable when
  // SQLite cannot open it, FailedPrecondition for a newer schema, DataLoss when the file is
  // not a usable database, is empty (truncated) or fails PRAGMA quick_check — a damaged
  // database is refused, never silently replaced.
  // `plan_hooks`: how LoadJobs checks and fills training plans (PlanHooks).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StateStore>> Open(
      const std::string& path, PlanHooks plan_hooks = {});
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // Inserts or replaces the job row and appends `events` in one transaction. Events must
  // already carry their sequence numbers; a duplicate (job_id, seq) is Internal.
  [[nodiscard]] absl::Status Write(const JobRecord* job, const std::vector<Event>& events);
  [[nodiscard]] absl::Status PutJob(const JobRecord& job) { return Write(&job, {}); }
  // Every job, in submission order; damaged rows quarantined as the header says (they come back
  // FAILED, or not at all when they cannot name their job).
  [[nodiscard]] absl::StatusOr<std::vector<JobRecord>> LoadJobs();
  // The quarantine table: rows LoadJobs set aside, oldest first.
  struct QuarantinedRow {
    std::string table;
    int64_t row_id = 0;
    std::string job_id;  // "" when the row could not name it
    std::string reason;
    std::string row_sql;  // the row's values as SQL literals, in the table's column order
  };
  [[nodiscard]] absl::StatusOr<std::vector<QuarantinedRow>> ListQuarantined();
  // Events of a job with seq > after_seq, ascending, at most `limit`.
  [[nodiscard]] absl::StatusOr<std::vector<Event>> ReadEvents(const std::string& job_id,
                                                              int64_t after_seq, int64_t limit);
  // The job's newest event of `kind` (the dashboard's latest metrics), nullopt when it has none.
  [[nodiscard]] absl::StatusOr<std::optional<Event>> LastEventOfKind(const std::string& job_id,
                                                                     EventKind kind);
  // Highest seq of the job's events; 0 when it has none.
  [[nodiscard]] absl::StatusOr<int64_t> LastSeq(const std::string& job_id);

  // This state database's identity: 16 hex digits drawn at random on first use and kept in the
  // meta table, so it survives acceld restarts. Part of the owner of every checkpoint directory
  // its jobs save into (engine/checkpoint/dir_owner.h): another acceld's job-7 is another job.
  [[nodiscard]] absl::StatusOr<std::string> StateId();
  // The number the next new job gets: past every job ever stored, deleted ones included.
  [[nodiscard]] absl::StatusOr<int64_t> NextJobNumber();
  // Removes the job row with its events, attempts and checkpoint records, in one transaction.
  // NotFound for an unknown id. (Files the job wrote are the caller's business.)
  [[nodiscard]] absl::Status DeleteJob(const std::string& job_id);

  [[nodiscard]] absl::Status PutAttempt(const AttemptRecord& attempt);
  [[nodiscard]] absl::StatusOr<std::vector<AttemptRecord>> ListAttempts(const std::string& job_id);
  [[nodiscard]] absl::Status AddCheckpoint(const CheckpointRecord& checkpoint);
  [[nodiscard]] absl::StatusOr<std::vector<CheckpointRecord>> ListCheckpoints(
      const std::string& job_id);

 private:
  StateStore(sqlite3* db, std::string path, PlanHooks hooks)
      : path_(std::move(path)), plan_hooks_(std::move(hooks)), db_(db) {}
  // The job row's INSERT OR REPLACE (with the spec's checksum), inside a caller's transaction.
  [[nodiscard]] absl::Status WriteJobRow(const JobRecord& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves rowid `row_id` of jobs into the quarantine table; `keep`: rewritten as FAILED with a
  // state event, otherwise deleted. One transaction.
  [[nodiscard]] absl::Status Quarantine(int64_t row_id, const JobRecord* keep,
                                        const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A plan for a job stored before plans (PlanHooks::fill), written back; when the spec no
  // longer lowers, the reason joins `problems` (the row is quarantined).
  [[nodiscard]] absl::Status FillPlan(JobRecord& job, std::vector<std::string>* problems)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back when it fails.
  [[nodiscard]] absl::Status InTransaction(const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PRAGMA quick_check: DataLoss naming the file and the first problem.
  [[nodiscard]] absl::Status QuickCheck(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(const char* what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const PlanHooks plan_hooks_;
  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accel::server
