#include "server/http/dashboard_api.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "job/job_file.h"
#include "server/services/convert.h"

namespace accel::server {
namespace {

constexpr int64_t kDefaultEventLimit = 1000;
constexpr int64_t kMaxEventLimit = 10000;

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kInvalidArgument: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kFailedPrecondition: return 409;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    default: return 500;
  }
}

// JSON the browser must not cache: every answer is the state of now.
HttpResponse JsonReply(int status, std::string body) {
  HttpResponse res;
  res.status = status;
  res.content_type = "application/json";
  res.body = std::move(body);
  res.headers.emplace_back("Cache-Control", "no-store");
  return res;
}

HttpResponse Ok(std::string body) { return JsonReply(200, std::move(body)); }

// Elements already in JSON joined into a JSON array.
std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) absl::StrAppend(&out, i ? "," : "", items[i]);
  return out + "]";
}

accel::v1::Job JobJson(const DashboardDeps& d, const JobRecord& job, absl::Status* error) {
  absl::StatusOr<int64_t> last = d.events->LastSeq(job.id);
  if (!last.ok()) *error = last.status();
  return JobToProto(job, last.ok() ? *last : 0);
}

// The job a route names: 400 for an id ValidateJobId refuses, 404 for an unknown one.
absl::StatusOr<JobRecord> NamedJob(const DashboardDeps& d, const std::string& job_id) {
  if (absl::Status s = job::ValidateJobId(job_id); !s.ok()) return s;
  return d.registry->Get(job_id);
}

// A query parameter as an integer: `fallback` when absent, InvalidArgument naming it otherwise.
absl::StatusOr<int64_t> IntParam(const char* name, const std::string& text, int64_t fallback) {
  if (text.empty()) return fallback;
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected an integer, got \"", text.substr(0, 40), "\""));
  }
  return v;
}

}  // namespace

HttpResponse ErrorReply(const absl::Status& status) {
  nlohmann::json body = {{"error",
                          {{"code", absl::StatusCodeToString(status.code())},
                           {"message", std::string(status.message())}}}};
  return JsonReply(HttpStatusOf(status.code()), body.dump());
}

HttpResponse JobsReply(const DashboardDeps& d) {
  std::vector<JobRecord> jobs = d.registry->List();
  std::reverse(jobs.begin(), jobs.end());  // newest first, as ListJobs answers
  std::vector<std::string> job_json;
  // The newest metrics of each job, for the list's loss and tokens/s columns.
  std::string metrics = "{";
  for (const JobRecord& job : jobs) {
    absl::Status error;
    job_json.push_back(MessageToJson(JobJson(d, job, &error)));
    if (!error.ok()) return ErrorReply(error);
    absl::StatusOr<std::optional<Event>> latest = d.store->LastEventOfKind(job.id, EventKind::kMetrics);
    if (!latest.ok()) return ErrorReply(latest.status());
    if (!latest->has_value()) continue;
    absl::StrAppend(&metrics, metrics.size() > 1 ? "," : "", nlohmann::json(job.id).dump(), ":",
                    (*latest)->body_json);
  }
  return Ok(absl::StrCat("{\"jobs\":", JsonArray(job_json), ",\"metrics\":", metrics, "}}"));
}

HttpResponse JobReply(const DashboardDeps& d, const std::string& job_id) {
  absl::StatusOr<JobRecord> job = NamedJob(d, job_id);
  if (!job.ok()) return ErrorReply(job.status());
  absl::Status error;
  accel::v1::Job proto = JobJson(d, *job, &error);
  if (!error.ok()) return ErrorReply(error);
  return Ok(MessageToJson(proto));
}

HttpResponse JobEventsReply(const DashboardDeps& d, const std::string& job_id,
                         const std::string& after, const std::string& limit) {
  absl::StatusOr<JobRecord> job = NamedJob(d, job_id);
  if (!job.ok()) return ErrorReply(job.status());
  absl::StatusOr<int64_t> after_seq = IntParam("after", after, 0);
  if (!after_seq.ok()) return ErrorReply(after_seq.status());
  absl::StatusOr<int64_t> max_events = IntParam("limit", limit, kDefaultEventLimit);
  if (!max_events.ok()) return ErrorReply(max_events.status());
  if (*max_events <= 0) {
    return ErrorReply(absl::InvalidArgumentError(
        absl::StrCat("limit: must be positive, got ", *max_events)));
  }
  // Read the newest seq first: the events read next end at it or later, never before.
  absl::StatusOr<int64_t> last_seq = d.events->LastSeq(job_id);
  if (!last_seq.ok()) return ErrorReply(last_seq.status());
  absl::StatusOr<std::vector<Event>> events =
      d.events->Read(job_id, *after_seq, std::min(*max_events, kMaxEventLimit));
  if (!events.ok()) return ErrorReply(events.status());
  std::vector<std::string> event_json;
  for (const Event& e : *events) {
    absl::StatusOr<accel::v1::Event> proto = EventToProto(e);
    if (!proto.ok()) return ErrorReply(proto.status());
    event_json.push_back(MessageToJson(*proto));
  }
  const int64_t newest = events->empty() ? *last_seq : std::max(*last_seq, events->back().seq);
  return Ok(absl::StrCat("{\"events\":", JsonArray(event_json), ",\"last_seq\":", newest, "}"));
}

HttpResponse CheckpointsReply(const DashboardDeps& d, const std::string& job_id) {
  absl::StatusOr<JobRecord> job = NamedJob(d, job_id);
  if (!job.ok()) return ErrorReply(job.status());
  absl::StatusOr<std::vector<CheckpointRecord>> list = d.store->ListCheckpoints(job_id);
  if (!list.ok()) return ErrorReply(list.status());
  std::vector<std::string> items;
  for (const CheckpointRecord& c : *list) items.push_back(MessageToJson(CheckpointToProto(c)));
  return Ok(absl::StrCat("{\"checkpoints\":", JsonArray(items), "}"));
}

HttpResponse ClusterReply(const DashboardDeps& d) {
  return Ok(MessageToJson(ClusterToProto(d.manager->Cluster(), d.version)));
}

}  // namespace accel::server
