#include "server/services/services.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "job/job_file.h"
#include "job/job_lowering.h"
#include "job/job_paths.h"
#include "rpc/status.h"
#include "server/services/convert.h"
#include "server/core/same_secret.h"

namespace accel::server {
namespace {

using rpc::ToGrpc;

// The "Bearer" token of the call, or "".
std::string BearerToken(const grpc::ServerContext& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  std::string value(it->second.data(), it->second.size());
  if (!absl::StartsWithIgnoreCase(value, "bearer ")) return "";
  return value.substr(7);
}

const grpc::Status kNoToken(grpc::StatusCode::UNAUTHENTICATED,
                            "missing `authorization: Bearer <token>` metadata");
const grpc::Status kBadToken(grpc::StatusCode::UNAUTHENTICATED, "wrong token");

// A refusal at the door, prefixed with the job file when there is one: PermissionDenied (a path
// outside --data-root) keeps its code, everything else is InvalidArgument.
absl::Status Refused(const std::string& source, const absl::Status& s) {
  return absl::Status(s.code() == absl::StatusCode::kPermissionDenied
                          ? s.code()
                          : absl::StatusCode::kInvalidArgument,
                      absl::StrCat(source, s.message()));
}

// The spec a SubmitJob asks for: `spec`, or the job file it names, parsed here under `access`
// (no error quotes a file acceld read; each file under --data-root when given).
absl::StatusOr<accel::v1::JobSpec> RequestedSpec(const accel::v1::SubmitJobRequest& req,
                                                 const rpc::FileAccess& access) {
  const bool from_file = !req.job_file().empty();
  if (!from_file) {
    if (!req.accelerate_config().empty() || !req.deepspeed_config().empty()) {
      return absl::InvalidArgumentError(
          "accelerate_config and deepspeed_config go with job_file (a spec carries its configs)");
    }
    return req.spec();
  }
  if (req.has_spec()) return absl::InvalidArgumentError("give spec or job_file, not both");
  for (const auto& [key, path] : {std::pair{"job_file", &req.job_file()},
                                  std::pair{"accelerate_config", &req.accelerate_config()},
                                  std::pair{"deepspeed_config", &req.deepspeed_config()}}) {
    if (!path->empty() && (*path)[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": must be an absolute path (acceld reads it), got \"", *path, "\""));
    }
  }
  absl::StatusOr<accel::v1::JobSpec> spec =
      job::ParseJobFile(req.job_file(), req.accelerate_config(), req.deepspeed_config(), access);
  if (!spec.ok()) return Refused("", spec.status());
  return spec;
}

}  // namespace

// ---- client API -------------------------------------------------------------------------------

grpc::Status CoordinatorService::CheckClient(grpc::ServerContext* ctx) const {
  const std::string token = BearerToken(*ctx);
  if (token.empty()) return kNoToken;
  if (SameSecret(token, d_.client_token)) return grpc::Status::OK;
  if (d_.manager->AuthenticateWorker(token).ok()) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "a worker token cannot call the client API");
  }
  return kBadToken;
}

accel::v1::Job CoordinatorService::ToProto(const JobRecord& job) const {
  absl::StatusOr<int64_t> last = d_.events->LastSeq(job.id);
  return JobToProto(job, last.ok() ? *last : 0);
}

grpc::Status CoordinatorService::SubmitJob(grpc::ServerContext* ctx,
                                           const accel::v1::SubmitJobRequest* req,
                                           accel::v1::SubmitJobResponse* resp) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  // Every file acceld opens here is opened for the client: no error quotes one, and each lies
  // under --data-root when given (docs/rpc.md, "What acceld reads on a client's behalf").
  const rpc::FileAccess access{Echo::kPositionsOnly, d_.data_roots};
  absl::StatusOr<accel::v1::JobSpec> requested = RequestedSpec(*req, access);
  if (!requested.ok()) return ToGrpc(requested.status());
  accel::v1::JobSpec spec = *std::move(requested);
  // The stored spec says where the job runs, whatever acceld's default later becomes.
  if (spec.resources().launcher().empty()) {
    spec.mutable_resources()->set_launcher(d_.manager->default_launcher());
  }
  // A job file's errors name it, as accelctl's do; its values are acceld's reading of a file,
  // not the client's words, so they are not quoted. A spec's own values are the client's.
  const std::string source = req->job_file().empty() ? "" : req->job_file() + ": ";
  const Echo texts = req->job_file().empty() ? Echo::kContent : Echo::kPositionsOnly;
  if (absl::Status s = job::CheckJobPaths(spec, access); !s.ok()) {
    return ToGrpc(Refused(source, s));
  }
  if (absl::Status s = job::ValidateJobSpec(spec, /*check_files=*/true, texts); !s.ok()) {
    return ToGrpc(Refused(source, s));
  }
  // The one lowering the workers will run on the same spec: what it refuses, they would.
  absl::StatusOr<config::LoweredJob> lowered =
      job::LowerJobSpec(spec, /*check_files=*/true, Env::Default(), texts);
  if (!lowered.ok()) return ToGrpc(Refused(source, lowered.status()));
  if (absl::Status s = job::CheckWeightsFit(*lowered, Env::Default()); !s.ok()) {
    return ToGrpc(Refused(source, s));
  }
  // The NVMe offload directory a config names is written by the ranks: under the roots too.
  for (const auto& [key, dir] :
       {std::pair<const char*, const std::string&>{"offload_dir", lowered->options.shard.offload_dir},
        {"offload_param_dir", lowered->options.shard.offload_param_dir}}) {
    if (dir.empty()) continue;
    if (absl::Status s = access.Check(key, dir); !s.ok()) return ToGrpc(Refused(source, s));
  }
  absl::StatusOr<JobRecord> record = JobRecordFromSpec(spec, *lowered);
  if (!record.ok()) return ToGrpc(record.status());
  const JobRecord& job = *record;
  absl::StatusOr<JobRecord> created = d_.manager->Submit(job);
  if (!created.ok()) return ToGrpc(created.status());
  ACCEL_LOG(info, "submitted {} ({}, {} ranks)", created->id, created->name, created->slots);
  *resp->mutable_job() = ToProto(*created);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetJob(grpc::ServerContext* ctx,
                                        const accel::v1::GetJobRequest* req,
                                        accel::v1::Job* resp) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  if (absl::Status s = job::ValidateJobId(req->job_id()); !s.ok()) return ToGrpc(s);
  absl::StatusOr<JobRecord> job = d_.registry->Get(req->job_id());
  if (!job.ok()) return ToGrpc(job.status());
  *resp = ToProto(*job);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListJobs(grpc::ServerContext* ctx,
                                          const accel::v1::ListJobsRequest* req,
                                          accel::v1::ListJobsResponse* resp) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  std::set<int> states;
  for (int s : req->states()) states.insert(s);
  std::vector<JobRecord> jobs = d_.registry->List();
  std::reverse(jobs.begin(), jobs.end());  // newest first
  for (const JobRecord& j : jobs) {
    if (!states.empty() && states.count(static_cast<int>(j.state)) == 0) continue;
    if (req->limit() > 0 && resp->jobs_size() >= req->limit()) break;
    *resp->add_jobs() = ToProto(j);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::CancelJob(grpc::ServerContext* ctx,
                                           const accel::v1::CancelJobRequest* req,
                                           accel::v1::Job* resp) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  if (absl::Status s = job::ValidateJobId(req->job_id()); !s.ok()) return ToGrpc(s);
  absl::StatusOr<JobRecord> job = d_.manager->Cancel(req->job_id());
  if (!job.ok()) return ToGrpc(job.status());
  // Answer once the workers are gone (the job is CANCELLED then), or when the caller gives up.
  const absl::Time give_up = absl::Now() + d_.cancel_wait;
  while (!IsTerminal(job->state) && absl::Now() < give_up && !ctx->IsCancelled()) {
    absl::SleepFor(absl::Milliseconds(20));
    job = d_.registry->Get(req->job_id());
    if (!job.ok()) return ToGrpc(job.status());
  }
  *resp = ToProto(*job);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::DeleteJob(grpc::ServerContext* ctx,
                                           const accel::v1::DeleteJobRequest* req,
                                           accel::v1::Job* resp) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  if (absl::Status s = job::ValidateJobId(req->job_id()); !s.ok()) return ToGrpc(s);
  absl::StatusOr<JobRecord> job = d_.manager->Delete(req->job_id());
  if (!job.ok()) return ToGrpc(job.status());
  ACCEL_LOG(info, "deleted {} ({})", job->id, JobStateName(job->state));
  *resp = ToProto(*job);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::WatchJob(grpc::ServerContext* ctx,
                                          const accel::v1::WatchJobRequest* req,
                                          grpc::ServerWriter<accel::v1::Event>* writer) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  if (absl::Status s = job::ValidateJobId(req->job_id()); !s.ok()) return ToGrpc(s);
  if (absl::StatusOr<JobRecord> job = d_.registry->Get(req->job_id()); !job.ok()) {
    return ToGrpc(job.status());
  }
  std::set<int> kinds(req->kinds().begin(), req->kinds().end());
  auto wanted = [&](const Event& e) {
    if (!kinds.empty() && kinds.count(static_cast<int>(e.kind)) == 0) return false;
    if (req->has_rank() && e.rank >= 0 && e.rank != req->rank()) return false;
    return true;
  };
  absl::StatusOr<std::unique_ptr<Subscription>> sub =
      d_.events->Subscribe(req->job_id(), req->from_seq());
  if (!sub.ok()) return ToGrpc(sub.status());
  // Without follow the stream ends at the newest event that existed when the call came in.
  absl::StatusOr<int64_t> end_seq = d_.events->LastSeq(req->job_id());
  if (!end_seq.ok()) return ToGrpc(end_seq.status());
  while (!ctx->IsCancelled()) {
    absl::StatusOr<std::vector<Event>> batch = (*sub)->Next(absl::Milliseconds(200));
    if (!batch.ok()) return ToGrpc(batch.status());
    if (batch->empty()) {
      // A job deleted while watched has no more events to give: end instead of waiting.
      if (absl::StatusOr<JobRecord> job = d_.registry->Get(req->job_id()); !job.ok()) {
        return ToGrpc(job.status());
      }
    }
    for (const Event& e : *batch) {
      if (!req->follow() && e.seq > *end_seq) return grpc::Status::OK;
      if (!wanted(e)) continue;
      absl::StatusOr<accel::v1::Event> p = EventToProto(e);
      if (!p.ok()) return ToGrpc(p.status());
      // Blocks while the client is slow: the transport's flow control is the backpressure,
      // and meanwhile the subscription's bounded queue falls back to SQLite.
      if (!writer->Write(*p)) return grpc::Status(grpc::StatusCode::CANCELLED, "watcher left");
    }
    const int64_t cursor = (*sub)->cursor();
    if (!req->follow()) {
      if (cursor >= *end_seq) return grpc::Status::OK;
      continue;
    }
    // Follow ends after the job's final event has been sent.
    absl::StatusOr<JobRecord> job = d_.registry->Get(req->job_id());
    if (!job.ok()) return ToGrpc(job.status());
    if (IsTerminal(job->state)) {
      absl::StatusOr<int64_t> last = d_.events->LastSeq(req->job_id());
      if (last.ok() && cursor >= *last) return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
}

grpc::Status CoordinatorService::ListCheckpoints(grpc::ServerContext* ctx,
                                                 const accel::v1::ListCheckpointsRequest* req,
                                                 accel::v1::ListCheckpointsResponse* resp) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  if (absl::Status s = job::ValidateJobId(req->job_id()); !s.ok()) return ToGrpc(s);
  if (absl::StatusOr<JobRecord> job = d_.registry->Get(req->job_id()); !job.ok()) {
    return ToGrpc(job.status());
  }
  absl::StatusOr<std::vector<CheckpointRecord>> list = d_.store->ListCheckpoints(req->job_id());
  if (!list.ok()) return ToGrpc(list.status());
  for (const CheckpointRecord& c : *list) *resp->add_checkpoints() = CheckpointToProto(c);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetCluster(grpc::ServerContext* ctx,
                                            const accel::v1::GetClusterRequest* req,
                                            accel::v1::Cluster* resp) {
  if (grpc::Status s = CheckClient(ctx); !s.ok()) return s;
  *resp = ClusterToProto(d_.manager->Cluster(), d_.version);
  return grpc::Status::OK;
}

// ---- worker API -------------------------------------------------------------------------------

absl::StatusOr<WorkerIdentity> WorkerServiceImpl::CheckWorker(grpc::ServerContext* ctx) const {
  const std::string token = BearerToken(*ctx);
  if (token.empty()) return absl::UnauthenticatedError(kNoToken.error_message());
  if (SameSecret(token, d_.client_token)) {
    return absl::PermissionDeniedError("the worker API takes a job's worker token");
  }
  return d_.manager->AuthenticateWorker(token);
}

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext* ctx,
                                         const accel::v1::RegisterRequest* req,
                                         accel::v1::Assignment* resp) {
  absl::StatusOr<WorkerIdentity> who = CheckWorker(ctx);
  if (!who.ok()) return ToGrpc(who.status());
  if (req->job_id() != who->job_id || req->attempt() != who->attempt) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("this token is for ", who->job_id, " attempt ", who->attempt));
  }
  absl::StatusOr<WorkerAssignment> a = d_.manager->Register(*who, req->rank(), req->pid());
  if (!a.ok()) return ToGrpc(a.status());
  resp->set_job_id(a->job_id);
  resp->set_attempt(a->attempt);
  resp->set_rank(a->rank);
  resp->set_world_size(a->world_size);
  absl::StatusOr<accel::v1::JobSpec> spec = job::JobSpecFromJson(a->spec_json);
  if (!spec.ok()) return ToGrpc(spec.status());
  *resp->mutable_spec() = *spec;
  // The plan acceld lowered once at submit: the rank trains it without lowering again.
  if (a->training_plan.empty() || !resp->mutable_plan()->ParseFromString(a->training_plan)) {
    return ToGrpc(absl::FailedPreconditionError(absl::StrCat(
        a->job_id, " has no readable training plan (stored before plans existed and its spec no "
        "longer lowers); resubmit it")));
  }
  resp->set_rendezvous_prefix(a->rendezvous_prefix);
  resp->set_heartbeat_interval_s(a->heartbeat_interval_s);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::ReportEvents(grpc::ServerContext* ctx,
                                             grpc::ServerReader<accel::v1::WorkerEvent>* reader,
                                             accel::v1::ReportEventsResponse* resp) {
  absl::StatusOr<WorkerIdentity> who = CheckWorker(ctx);
  if (!who.ok()) return ToGrpc(who.status());
  accel::v1::WorkerEvent event;
  while (reader->Read(&event)) {
    absl::StatusOr<std::optional<WorkerReport>> report = ReportFromProto(event);
    if (!report.ok()) return ToGrpc(report.status());
    std::vector<WorkerReport> reports;
    if (report->has_value()) reports.push_back(std::move(**report));
    absl::Status s = d_.manager->Report(*who, event.rank(), std::move(reports));
    if (!s.ok()) return ToGrpc(s);
  }
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::KvSet(grpc::ServerContext* ctx, const accel::v1::KvSetRequest* req,
                                      accel::v1::KvSetResponse* resp) {
  absl::StatusOr<WorkerIdentity> who = CheckWorker(ctx);
  if (!who.ok()) return ToGrpc(who.status());
  auto kv = d_.manager->Kv(*who);
  if (!kv.ok()) return ToGrpc(kv.status());
  return ToGrpc((*kv)->Set(req->key(), req->value()));
}

namespace {
// A worker asks to wait up to its own timeout; one call never parks a server thread longer than
// this (GrpcStore calls again).
absl::Duration ServerWait(int64_t timeout_ms) {
  return std::clamp(absl::Milliseconds(timeout_ms), absl::ZeroDuration(), absl::Seconds(10));
}
}  // namespace

grpc::Status WorkerServiceImpl::KvGet(grpc::ServerContext* ctx, const accel::v1::KvGetRequest* req,
                                      accel::v1::KvGetResponse* resp) {
  absl::StatusOr<WorkerIdentity> who = CheckWorker(ctx);
  if (!who.ok()) return ToGrpc(who.status());
  auto kv = d_.manager->Kv(*who);
  if (!kv.ok()) return ToGrpc(kv.status());
  absl::StatusOr<std::string> v = (*kv)->Get(req->key(), ServerWait(req->timeout_ms()));
  if (!v.ok()) return ToGrpc(v.status());
  resp->set_value(*v);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::KvWait(grpc::ServerContext* ctx,
                                       const accel::v1::KvWaitRequest* req,
                                       accel::v1::KvWaitResponse* resp) {
  absl::StatusOr<WorkerIdentity> who = CheckWorker(ctx);
  if (!who.ok()) return ToGrpc(who.status());
  auto kv = d_.manager->Kv(*who);
  if (!kv.ok()) return ToGrpc(kv.status());
  std::vector<std::string> keys(req->keys().begin(), req->keys().end());
  return ToGrpc((*kv)->Wait(keys, ServerWait(req->timeout_ms())));
}

grpc::Status WorkerServiceImpl::KvAdd(grpc::ServerContext* ctx, const accel::v1::KvAddRequest* req,
                                      accel::v1::KvAddResponse* resp) {
  absl::StatusOr<WorkerIdentity> who = CheckWorker(ctx);
  if (!who.ok()) return ToGrpc(who.status());
  auto kv = d_.manager->Kv(*who);
  if (!kv.ok()) return ToGrpc(kv.status());
  absl::StatusOr<int64_t> v = (*kv)->Add(req->key(), req->delta());
  if (!v.ok()) return ToGrpc(v.status());
  resp->set_value(*v);
  return grpc::Status::OK;
}

}  // namespace accel::server
