#include "server/services/convert.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "job/job_file.h"
#include "job/job_lowering.h"
#include "rpc/memory_stats.h"
#include "job/plan_proto.h"

namespace accel::server {

std::string MessageToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

absl::StatusOr<JobRecord> JobRecordFromSpec(const accel::v1::JobSpec& spec,
                                            const config::LoweredJob& lowered) {
  JobRecord job;
  job.name = spec.name();
  job.spec_json = job::JobSpecToJson(job::ResolvedSpec(spec, lowered));
  // The one lowering's result, typed: stored, handed to every rank, shown by GetJob.
  ACCEL_ASSIGN_OR_RETURN(accel::v1::TrainingPlan plan, job::TrainingPlanOfSpec(spec, lowered));
  job.training_plan = plan.SerializeAsString();
  job.slots = lowered.world_size;
  job.priority = spec.priority();
  job.max_restarts = spec.max_restarts();
  ACCEL_ASSIGN_OR_RETURN(job.knobs.device, ParseDeviceKind(spec.resources().device()));
  job.knobs.threads = std::max(1, spec.resources().threads_per_process());
  job.knobs.heartbeat_timeout_s = spec.heartbeat_timeout_s();
  job.knobs.stop_grace_s = spec.stop_grace_s();
  job.knobs.checkpoint_dir = spec.checkpoint().dir();
  job.knobs.launcher = spec.resources().launcher().empty() ? "local" : spec.resources().launcher();
  job.knobs.nodes = std::max(1, spec.resources().nodes());
  const auto& settings = job.knobs.launcher == "slurm" ? spec.resources().slurm()
                                                       : spec.resources().kubernetes();
  for (const auto& [k, v] : settings) job.knobs.launcher_settings[k] = v;
  return job;
}

absl::StatusOr<accel::v1::JobPlan> ShownPlan(const std::string& training_plan) {
  accel::v1::TrainingPlan plan;
  if (training_plan.empty() || !plan.ParseFromString(training_plan)) {
    return absl::InvalidArgumentError("the stored training plan does not parse");
  }
  ACCEL_ASSIGN_OR_RETURN(job::PlannedJob planned, job::PlannedJobFromPlan(plan));
  return job::PlanToProto(planned);
}

PlanHooks AcceldPlanHooks(Env* env) {
  PlanHooks hooks;
  hooks.check = [](const std::string& training_plan) -> std::string {
    absl::StatusOr<accel::v1::JobPlan> shown = ShownPlan(training_plan);
    return shown.ok() ? "" : std::string(shown.status().message());
  };
  hooks.fill = [env](const JobRecord& job) -> absl::StatusOr<std::string> {
    ACCEL_ASSIGN_OR_RETURN(accel::v1::JobSpec spec, job::JobSpecFromJson(job.spec_json));
    ACCEL_ASSIGN_OR_RETURN(accel::v1::TrainingPlan plan, job::PlanJobSpec(spec, env));
    return plan.SerializeAsString();
  };
  return hooks;
}

accel::v1::Job JobToProto(const JobRecord& job, int64_t last_seq) {
  accel::v1::Job p;
  p.set_id(job.id);
  absl::StatusOr<accel::v1::JobSpec> spec = job::JobSpecFromJson(job.spec_json);
  if (spec.ok()) *p.mutable_spec() = *spec;
  if (absl::StatusOr<accel::v1::JobPlan> plan = ShownPlan(job.training_plan); plan.ok()) {
    *p.mutable_plan() = *std::move(plan);
  } else if (!job.plan_json.empty()) {  // a job from before plans whose spec no longer lowers
    (void)google::protobuf::util::JsonStringToMessage(job.plan_json, p.mutable_plan());
  }
  p.set_state(static_cast<accel::v1::JobState>(static_cast<int>(job.state)));
  p.set_attempt(job.attempt);
  p.set_restarts_used(job.restarts_used);
  p.set_error(job.error);
  p.set_submit_time_us(job.submit_us);
  p.set_start_time_us(job.start_us);
  p.set_end_time_us(job.end_us);
  p.set_last_seq(last_seq);
  p.set_last_step(job.last_step);
  p.set_placement(job.placement);
  return p;
}

absl::StatusOr<accel::v1::Event> EventToProto(const Event& e) {
  accel::v1::Event p;
  p.set_job_id(e.job_id);
  p.set_seq(e.seq);
  p.set_time_us(e.time_us);
  p.set_attempt(e.attempt);
  p.set_rank(e.rank);
  google::protobuf::Message* body = nullptr;
  switch (e.kind) {
    case EventKind::kState: body = p.mutable_state(); break;
    case EventKind::kMetrics: body = p.mutable_metrics(); break;
    case EventKind::kMemory: body = p.mutable_memory(); break;
    case EventKind::kCheckpoint: body = p.mutable_checkpoint(); break;
    case EventKind::kLog: body = p.mutable_log(); break;
    case EventKind::kEval: body = p.mutable_eval(); break;
    case EventKind::kSample: body = p.mutable_sample(); break;
  }
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;  // bodies written by a newer acceld
  auto s = google::protobuf::util::JsonStringToMessage(e.body_json, body, opts);
  if (!s.ok()) {
    return absl::DataLossError(absl::StrCat("event ", e.job_id, "#", e.seq,
                                            " has an unreadable body: ", s.ToString()));
  }
  if (e.kind == EventKind::kMemory) {
    // Stored before issue 29: the ledger as a JSON string, read into the typed pools. A damaged
    // one reads as no pools (the record's totals still show), as the old readers did.
    (void)rpc::MemoryPoolsFromStoredJson(e.body_json, p.mutable_memory());
  }
  return p;
}

accel::v1::Checkpoint CheckpointToProto(const CheckpointRecord& c) {
  accel::v1::Checkpoint p;
  p.set_job_id(c.job_id);
  p.set_attempt(c.attempt);
  p.set_step(c.step);
  p.set_path(c.path);
  p.set_kind(c.kind);
  p.set_bytes(c.bytes);
  p.set_seconds(c.seconds);
  p.set_time_us(c.time_us);
  if (c.eval_loss.has_value()) p.set_eval_loss(*c.eval_loss);
  return p;
}

accel::v1::Cluster ClusterToProto(const ClusterView& v, const std::string& version) {
  accel::v1::Cluster p;
  p.set_device(v.device);
  p.set_total_slots(v.total_slots);
  p.set_free_slots(v.free_slots);
  for (const auto& [job, slots] : v.allocations) {
    accel::v1::Allocation* a = p.add_allocations();
    a->set_job_id(job);
    for (int s : slots) a->add_slots(s);
    if (auto it = v.allocation_device.find(job); it != v.allocation_device.end()) {
      a->set_device(it->second);
    }
  }
  for (const PoolView& pool_view : v.pools) {
    accel::v1::DevicePool* pool = p.add_pools();
    pool->set_device(pool_view.device);
    pool->set_total_slots(pool_view.total_slots);
    pool->set_free_slots(pool_view.free_slots);
    for (const std::string& n : pool_view.names) pool->add_names(n);
    for (int64_t m : pool_view.memory_bytes) pool->add_memory_bytes(m);
  }
  for (const std::string& id : v.queue) p.add_queue(id);
  p.set_version(version);
  return p;
}

absl::StatusOr<std::optional<WorkerReport>> ReportFromProto(const accel::v1::WorkerEvent& e) {
  WorkerReport r;
  switch (e.body_case()) {
    case accel::v1::WorkerEvent::kHeartbeat:
      return std::optional<WorkerReport>();
    case accel::v1::WorkerEvent::kMetrics:
      r.kind = EventKind::kMetrics;
      r.step = e.metrics().step();
      r.body_json = MessageToJson(e.metrics());
      break;
    case accel::v1::WorkerEvent::kMemory:
      r.kind = EventKind::kMemory;
      r.body_json = MessageToJson(e.memory());
      break;
    case accel::v1::WorkerEvent::kCheckpoint: {
      r.kind = EventKind::kCheckpoint;
      r.body_json = MessageToJson(e.checkpoint());
      CheckpointRecord c;
      c.step = e.checkpoint().step();
      c.path = e.checkpoint().path();
      c.kind = e.checkpoint().kind();
      c.bytes = e.checkpoint().bytes();
      c.seconds = e.checkpoint().seconds();
      if (e.checkpoint().has_eval_loss()) c.eval_loss = e.checkpoint().eval_loss();
      r.checkpoint = c;
      break;
    }
    case accel::v1::WorkerEvent::kLog:
      r.kind = EventKind::kLog;
      r.body_json = MessageToJson(e.log());
      break;
    case accel::v1::WorkerEvent::kEval:
      r.kind = EventKind::kEval;
      r.body_json = MessageToJson(e.eval());
      break;
    case accel::v1::WorkerEvent::kSample:
      r.kind = EventKind::kSample;
      r.body_json = MessageToJson(e.sample());
      break;
    case accel::v1::WorkerEvent::BODY_NOT_SET:
      return absl::InvalidArgumentError("worker event without a body");
  }
  return std::optional<WorkerReport>(std::move(r));
}

}  // namespace accel::server
