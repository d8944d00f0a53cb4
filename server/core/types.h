// Plain types of the control plane: job states, job records, events and checkpoint records.
// They mirror proto/accel/v1/job.proto (the numbering of JobState matches accel.v1.JobState) but
// carry no protobuf, so the server's classes are testable without gRPC. Event bodies are JSON in
// the proto3 JSON form of the matching accel.v1 message (StateEvent, MetricsEvent, ...), which is
// also how they sit in SQLite.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace accel::server {

enum class JobState : int {
  kQueued = 1,
  kStarting = 2,
  kRunning = 3,
  kRestarting = 4,
  kSucceeded = 5,
  kFailed = 6,
  kCancelled = 7,
};

const char* JobStateName(JobState state);  // "QUEUED", ...
[[nodiscard]] absl::StatusOr<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState state);
// The job state machine (DESIGN.md §5): QUEUED -> STARTING -> RUNNING -> SUCCEEDED | FAILED |
// CANCELLED, RESTARTING between attempts. See job_registry.cc for the table.
bool IsLegalTransition(JobState from, JobState to);

enum class EventKind : int {
  kState = 1,
  kMetrics = 2,
  kMemory = 3,
  kCheckpoint = 4,
  kLog = 5,
  kEval = 6,  // an evaluation on eval.data (issue 31)
  kSample = 7,  // a sample of the trained weights (train.sample_every)
};
const char* EventKindName(EventKind kind);  // "state", "metrics", ...
[[nodiscard]] absl::StatusOr<EventKind> ParseEventKind(std::string_view name);

struct Event {
  std::string job_id;
  int64_t seq = 0;      // assigned by EventLog: 1, 2, 3, ... per job
  int64_t time_us = 0;  // assigned by EventLog
  int attempt = 0;
  int rank = -1;        // -1: job-wide
  EventKind kind = EventKind::kLog;
  std::string body_json;
};

// The kind of slot a job's ranks take (resources.device).
enum class DeviceKind : int { kCpu = 0, kCuda = 1 };
const char* DeviceKindName(DeviceKind kind);  // "cpu", "cuda"
[[nodiscard]] absl::StatusOr<DeviceKind> ParseDeviceKind(std::string_view name);

// The spec fields the control plane itself acts on, parsed once at submit (services.cc) and
// stored beside the spec, so the manager never re-reads the spec's JSON.
struct JobKnobs {
  DeviceKind device = DeviceKind::kCpu;
  int threads = 1;                 // resources.threads_per_process
  double heartbeat_timeout_s = 0;  // 0: the daemon's default
  double stop_grace_s = 0;         // 0: the daemon's default
  std::string checkpoint_dir;      // empty: the job saves no checkpoints
  std::string launcher = "local";  // resources.launcher as acceld resolved it: local | slurm | kubernetes
  int nodes = 1;                   // resources.nodes: machines the ranks span
  // resources.slurm / resources.kubernetes of the job's launcher, by key ("partition").
  std::map<std::string, std::string> launcher_settings;
};

struct JobRecord {
  std::string id;        // "job-<number>"
  int64_t number = 0;    // submission order (FIFO key), unique
  std::string name;
  std::string spec_json;  // accel.v1.JobSpec in proto3 JSON, as it runs (job::ResolvedSpec)
  // accel.v1.TrainingPlan, serialized: the job as acceld lowered it once at submit, what every
  // rank trains (job/plan_proto.h). Empty only for a job stored before plans existed whose spec
  // no longer lowers and which has ended (state_store.h, PlanHooks).
  std::string training_plan;
  // accel.v1.JobPlan in proto3 JSON: how such an old job showed its plan (GetJob shows
  // training_plan when there is one). New jobs leave it empty.
  std::string plan_json;
  JobKnobs knobs;
  int slots = 1;          // resources.num_processes: the gang's size
  int priority = 0;
  int max_restarts = 0;
  JobState state = JobState::kQueued;
  int attempt = 0;
  int restarts_used = 0;
  std::string error;
  int64_t submit_us = 0;
  int64_t start_us = 0;
  int64_t end_us = 0;
  int64_t last_step = -1;
  std::string placement;  // the cluster's name for the newest attempt ("slurm job 4711"); "" local
};

struct AttemptRecord {
  std::string job_id;
  int attempt = 0;
  int64_t start_us = 0;
  int64_t end_us = 0;   // 0 while running
  std::string outcome;  // "", "succeeded", "failed: ...", "cancelled", "interrupted"
  std::string placement;  // the cluster's name for it; "" for the local launcher
};

struct CheckpointRecord {
  std::string job_id;
  int attempt = 0;
  int64_t step = 0;
  std::string path;
  std::string kind;
  int64_t bytes = 0;
  double seconds = 0;
  int64_t time_us = 0;
  std::optional<double> eval_loss;  // of the saved step, when it was evaluated first
};

}  // namespace accel::server
