#include "client/job_commands.h"

#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "accel/v1/coordinator.grpc.pb.h"
#include "client/event_format.h"
#include "client/watch_view.h"
#include "rpc/channel.h"
#include "job/job_file.h"
#include "rpc/status.h"

namespace accel::client {
namespace {

namespace v1 = accel::v1;

constexpr int kOk = 0;
constexpr int kFailure = 1;
constexpr int kInvalid = 2;

class Session {
 public:
  Session(const JobCommand& c, std::ostream& out, std::ostream& err)
      : c_(c), out_(out), err_(err) {}

  // Every file and flag is checked here, before a call is made (rpc/credential_files.h): a
  // token gRPC cannot send would abort the process inside the first call.
  absl::Status Connect() {
    const std::string server = c_.server.empty() ? rpc::kDefaultListen : c_.server;
    if (absl::Status s = rpc::CheckServerAddress(server); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--server ", s.message()));
    }
    std::string token_file = c_.token_file;
    if (token_file.empty()) token_file = rpc::DefaultTokenFile();
    absl::StatusOr<std::string> token = rpc::ReadTokenFile(token_file);
    if (!token.ok()) return token.status();
    token_ = *token;
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = rpc::MakeChannel(server, c_.tls_ca);
    if (!channel.ok()) return channel.status();
    stub_ = v1::Coordinator::NewStub(*channel);
    return absl::OkStatus();
  }

  void Prepare(grpc::ClientContext& ctx, absl::Duration deadline) {
    rpc::Authorize(ctx, token_);
    if (deadline > absl::ZeroDuration()) {
      ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
    }
  }

  int Fail(const absl::Status& s) {
    err_ << "accelctl: " << (s.code() == absl::StatusCode::kUnavailable
                                 ? absl::StrCat("cannot reach acceld at ",
                                                c_.server.empty() ? rpc::kDefaultListen : c_.server,
                                                ": ", s.message())
                                 : std::string(s.message()))
         << "\n";
    return s.code() == absl::StatusCode::kInvalidArgument ? kInvalid : kFailure;
  }
  int Fail(const grpc::Status& s) { return Fail(rpc::FromGrpc(s)); }

  bool json() const { return c_.output == "json"; }

  void PrintJob(const v1::Job& j) {
    if (json()) {
      out_ << Json(j) << "\n";
      return;
    }
    out_ << "job " << j.id() << " (" << j.spec().name() << "): " << StateName(j.state()) << "\n";
    out_ << "  attempt " << j.attempt() << ", restarts used " << j.restarts_used() << " of "
         << j.spec().max_restarts() << "\n";
    const auto& r = j.spec().resources();
    if (!r.launcher().empty() && r.launcher() != "local") {
      out_ << "  launcher " << r.launcher() << ", " << std::max(1, r.nodes()) << " nodes x "
           << r.num_processes() / std::max(1, r.nodes()) << " ranks"
           << (j.placement().empty() ? "" : ", attempt " + std::to_string(j.attempt()) + " is " +
                                                j.placement())
           << "\n";
    }
    out_ << "  step " << j.last_step() + 1 << "/" << j.spec().train().steps() << "\n";
    PrintPlan(j);
    out_ << "  submitted " << Time(j.submit_time_us()) << ", started " << Time(j.start_time_us())
         << ", ended " << Time(j.end_time_us()) << "\n";
    if (!j.error().empty()) out_ << "  error: " << j.error() << "\n";
    out_ << "  events 1.." << j.last_seq() << "\n";
  }

  absl::StatusOr<v1::Job> GetJob(const std::string& id) {
    grpc::ClientContext ctx;
    Prepare(ctx, absl::Seconds(30));
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job job;
    grpc::Status s = stub_->GetJob(&ctx, req, &job);
    if (!s.ok()) return rpc::FromGrpc(s);
    return job;
  }

  // Streams the job's events after `from_seq`, reconnecting after a dropped connection.
  // Returns the last sequence printed.
  absl::StatusOr<int64_t> Stream(const std::string& id, int64_t from_seq, bool follow,
                                 const std::vector<v1::EventKind>& kinds, bool raw_logs) {
    int64_t last = from_seq;
    absl::Time reconnect_until = absl::InfiniteFuture();
    std::optional<LiveWatch> view;  // text output of watch and submit --wait (watch_view.h)
    if (!json() && !raw_logs) {
      view.emplace(out_, WatchOptions{.mode = c_.verbose    ? WatchMode::kVerbose
                                              : c_.terminal ? WatchMode::kBlock
                                                            : WatchMode::kPlain,
                                      .width = c_.terminal_width});
      if (absl::StatusOr<v1::Job> job = GetJob(id); job.ok()) {
        view->set_world_size(job->spec().resources().num_processes());
      }
    }
    while (true) {
      grpc::ClientContext ctx;
      Prepare(ctx, absl::ZeroDuration());
      v1::WatchJobRequest req;
      req.set_job_id(id);
      req.set_from_seq(last);
      req.set_follow(follow);
      for (v1::EventKind k : kinds) req.add_kinds(k);
      if (c_.rank >= 0) req.set_rank(c_.rank);
      auto reader = stub_->WatchJob(&ctx, req);
      v1::Event e;
      while (reader->Read(&e)) {
        reconnect_until = absl::InfiniteFuture();
        last = e.seq();
        if (view) {
          view->OnEvent(e);
          continue;
        }
        if (json()) {
          out_ << Json(e) << "\n";
        } else if (raw_logs && e.has_log()) {
          out_ << (c_.rank >= 0 ? "" : absl::StrCat("[rank ", e.rank(), "] ")) << e.log().line()
               << "\n";
        } else {
          out_ << EventLine(e) << "\n";
        }
        out_.flush();
      }
      grpc::Status s = reader->Finish();
      // A stopping acceld drops the connection (UNAVAILABLE) or, once its shutdown deadline
      // passes, cancels the calls still open (CANCELLED): this client never cancels its own.
      const bool acceld_went_away = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                                    s.error_code() == grpc::StatusCode::CANCELLED;
      if (s.ok() || !follow || !acceld_went_away) {
        if (view) view->Finish();
        if (s.ok()) return last;
        return rpc::FromGrpc(s);
      }
      // acceld went away (restart?): try again from the last event seen.
      if (reconnect_until == absl::InfiniteFuture()) {
        reconnect_until = absl::Now() + absl::Seconds(c_.reconnect_s);
        const std::string note = absl::StrCat("accelctl: lost acceld (", s.error_message(),
                                              "); reconnecting from event ", last);
        // On a terminal the note goes above the block: a line on stderr would break its redraw.
        if (view && c_.terminal && !c_.verbose) {
          view->Note(note);
        } else {
          err_ << note << "\n";
        }
      }
      if (absl::Now() > reconnect_until) {
        if (view) view->Finish();
        return rpc::FromGrpc(s);
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
  }

  int Submit() {
    absl::StatusOr<v1::JobSpec> spec = job::ParseJobFile(c_.job_file, c_.accelerate_config, c_.deepspeed_config);
    if (!spec.ok()) {
      err_ << "accelctl: " << spec.status().message() << "\n";
      return spec.status().code() == absl::StatusCode::kNotFound ? kFailure : kInvalid;
    }
    if (absl::Status s = job::ValidateJobSpec(*spec, /*check_files=*/true); !s.ok()) {
      err_ << "accelctl: " << c_.job_file << ": " << s.message() << "\n";
      return kInvalid;
    }
    if (absl::Status s = Connect(); !s.ok()) return Fail(s);
    grpc::ClientContext ctx;
    Prepare(ctx, absl::Seconds(30));
    v1::SubmitJobRequest req;
    *req.mutable_spec() = *spec;
    v1::SubmitJobResponse resp;
    if (grpc::Status s = stub_->SubmitJob(&ctx, req, &resp); !s.ok()) return Fail(s);
    const std::string id = resp.job().id();
    if (json()) {
      out_ << Json(resp.job()) << "\n";
    } else {
      // The job as acceld lowered it: what its ranks will run.
      out_ << "submitted " << id << " (" << spec->name() << ", "
           << resp.job().spec().resources().num_processes() << " ranks)\n";
      PrintPlan(resp.job());
    }
    if (!c_.wait) return kOk;
    absl::StatusOr<int64_t> last = Stream(id, 0, /*follow=*/true, {}, false);
    if (!last.ok()) return Fail(last.status());
    absl::StatusOr<v1::Job> job = GetJob(id);
    if (!job.ok()) return Fail(job.status());
    if (!json()) {
      out_ << id << " " << StateName(job->state())
           << (job->error().empty() ? "" : absl::StrCat(": ", job->error())) << "\n";
    }
    return job->state() == v1::SUCCEEDED ? kOk : kFailure;
  }

  void PrintPlan(const v1::Job& j) { out_ << PlanText(j); }

  int Status() {
    absl::StatusOr<v1::Job> job = GetJob(c_.job_id);
    if (!job.ok()) return Fail(job.status());
    PrintJob(*job);
    if (!json()) {
      const QualityRecords records = ReadQualityRecords(c_.job_id);
      out_ << EvalSummaryText(records.evals) << LatestSampleText(records.latest_sample);
    }
    return kOk;
  }

  // The job's eval records so far and its latest sample (none when they cannot be read: status
  // shows the rest).
  struct QualityRecords {
    std::vector<v1::EvalEvent> evals;
    std::optional<v1::SampleEvent> latest_sample;
  };
  QualityRecords ReadQualityRecords(const std::string& id) {
    grpc::ClientContext ctx;
    Prepare(ctx, absl::Seconds(30));
    v1::WatchJobRequest req;
    req.set_job_id(id);
    req.set_follow(false);
    req.add_kinds(v1::EVAL);
    req.add_kinds(v1::SAMPLE);
    auto reader = stub_->WatchJob(&ctx, req);
    QualityRecords records;
    for (v1::Event e; reader->Read(&e);) {
      if (e.has_eval()) records.evals.push_back(e.eval());
      if (e.has_sample()) records.latest_sample = e.sample();
    }
    (void)reader->Finish();
    return records;
  }

  int List() {
    grpc::ClientContext ctx;
    Prepare(ctx, absl::Seconds(30));
    v1::ListJobsRequest req;
    for (const std::string& s : c_.states) {
      v1::JobState state;
      if (!v1::JobState_Parse(s, &state)) {
        err_ << "accelctl: --state: unknown job state " << s << "\n";
        return kInvalid;
      }
      req.add_states(state);
    }
    req.set_limit(c_.limit);
    v1::ListJobsResponse resp;
    if (grpc::Status s = stub_->ListJobs(&ctx, req, &resp); !s.ok()) return Fail(s);
    if (json()) {
      for (const v1::Job& j : resp.jobs()) out_ << Json(j) << "\n";
      return kOk;
    }
    out_ << absl::StrFormat("%-10s %-20s %-10s %7s %5s %-18s %-18s %11s  %s\n", "ID", "NAME",
                            "STATE", "ATTEMPT", "RANKS", "STRATEGY", "PRECISION", "STEP",
                            "SUBMITTED");
    for (const v1::Job& j : resp.jobs()) {
      const std::string strategy =
          j.has_plan() ? j.plan().strategy() : j.spec().sharding().strategy();
      const std::string precision = j.has_plan() ? j.plan().precision() : "?";
      out_ << absl::StrFormat("%-10s %-20s %-10s %7d %5d %-18s %-18s %5d/%-5d  %s\n", j.id(),
                              j.spec().name(), StateName(j.state()), j.attempt(),
                              j.spec().resources().num_processes(), strategy, precision,
                              j.last_step() + 1, j.spec().train().steps(),
                              Time(j.submit_time_us()));
    }
    return kOk;
  }

  int Cancel() {
    grpc::ClientContext ctx;
    Prepare(ctx, absl::Seconds(120));
    v1::CancelJobRequest req;
    req.set_job_id(c_.job_id);
    v1::Job job;
    if (grpc::Status s = stub_->CancelJob(&ctx, req, &job); !s.ok()) return Fail(s);
    if (json()) {
      out_ << Json(job) << "\n";
    } else {
      out_ << job.id() << " " << StateName(job.state()) << "\n";
    }
    return kOk;
  }

  // Deletes each job in turn; stops at the first refusal (that job and the rest are kept).
  int Delete() {
    for (const std::string& id : c_.job_ids) {
      grpc::ClientContext ctx;
      Prepare(ctx, absl::Seconds(30));
      v1::DeleteJobRequest req;
      req.set_job_id(id);
      v1::Job job;
      if (grpc::Status s = stub_->DeleteJob(&ctx, req, &job); !s.ok()) return Fail(s);
      if (json()) {
        out_ << Json(job) << "\n";
      } else {
        out_ << job.id() << " deleted (was " << StateName(job.state()) << ")\n";
      }
    }
    return kOk;
  }

  int Watch(bool logs) {
    std::vector<v1::EventKind> kinds;
    if (logs) kinds.push_back(v1::LOG);
    absl::StatusOr<int64_t> last =
        Stream(c_.job_id, c_.from_seq, logs ? c_.follow : true, kinds, logs);
    if (!last.ok()) return Fail(last.status());
    return kOk;
  }

  int Checkpoints() {
    grpc::ClientContext ctx;
    Prepare(ctx, absl::Seconds(30));
    v1::ListCheckpointsRequest req;
    req.set_job_id(c_.job_id);
    v1::ListCheckpointsResponse resp;
    if (grpc::Status s = stub_->ListCheckpoints(&ctx, req, &resp); !s.ok()) return Fail(s);
    if (json()) {
      for (const v1::Checkpoint& c : resp.checkpoints()) out_ << Json(c) << "\n";
      return kOk;
    }
    out_ << absl::StrFormat("%7s %6s %-8s %10s %8s %9s  %s\n", "ATTEMPT", "STEP", "KIND", "SIZE",
                            "SECONDS", "EVAL_LOSS", "PATH");
    for (const v1::Checkpoint& c : resp.checkpoints()) {
      out_ << absl::StrFormat("%7d %6d %-8s %10s %8.2f %9s  %s\n", c.attempt(), c.step(), c.kind(),
                              Bytes(c.bytes()), c.seconds(),
                              c.has_eval_loss() ? absl::StrFormat("%.4f", c.eval_loss()) : "-",
                              c.path());
    }
    return kOk;
  }

  int Cluster() {
    grpc::ClientContext ctx;
    Prepare(ctx, absl::Seconds(30));
    v1::Cluster cluster;
    if (grpc::Status s = stub_->GetCluster(&ctx, v1::GetClusterRequest(), &cluster); !s.ok()) {
      return Fail(s);
    }
    if (json()) {
      out_ << Json(cluster) << "\n";
      return kOk;
    }
    out_ << cluster.version() << ": " << cluster.free_slots() << " of " << cluster.total_slots()
         << " " << cluster.device() << " slots free\n";
    for (const v1::DevicePool& p : cluster.pools()) {
      if (p.device() == cluster.device()) continue;  // the line above
      out_ << "  " << p.free_slots() << " of " << p.total_slots() << " " << p.device()
           << " slots free:";
      for (int i = 0; i < p.names_size(); ++i) {
        out_ << (i ? "," : "") << " " << i << "=" << p.names(i);
        if (i < p.memory_bytes_size() && p.memory_bytes(i) > 0) {
          out_ << " (" << p.memory_bytes(i) / (1 << 20) << " MiB)";
        }
      }
      out_ << "\n";
    }
    for (const v1::Allocation& a : cluster.allocations()) {
      out_ << "  " << a.job_id() << ": " << (a.device().empty() ? "" : a.device() + " ")
           << "slots";
      for (int s : a.slots()) out_ << " " << s;
      out_ << "\n";
    }
    out_ << "  queue:";
    for (const std::string& id : cluster.queue()) out_ << " " << id;
    out_ << (cluster.queue().empty() ? " (empty)\n" : "\n");
    return kOk;
  }

 private:
  const JobCommand& c_;
  std::ostream& out_;
  std::ostream& err_;
  std::string token_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

}  // namespace

int RunParsedJobCommand(JobCommand& c, std::ostream& out, std::ostream& err) {
  c.terminal = IsTerminal(out, &c.terminal_width);
  Session session(c, out, err);
  if (c.chosen == "submit") return session.Submit();  // connects after checking the file
  // delete names its jobs in job_ids, checked below.
  const bool names_a_job = c.chosen != "list" && c.chosen != "cluster" && c.chosen != "delete";
  if (absl::Status s = job::ValidateJobId(c.job_id); names_a_job && !s.ok()) {
    return session.Fail(s);  // before sending: a huge id must not reach the wire
  }
  for (const std::string& id : c.job_ids) {
    if (absl::Status s = job::ValidateJobId(id); !s.ok()) return session.Fail(s);
  }
  if (absl::Status s = session.Connect(); !s.ok()) return session.Fail(s);
  if (c.chosen == "status") return session.Status();
  if (c.chosen == "list") return session.List();
  if (c.chosen == "cancel") return session.Cancel();
  if (c.chosen == "delete") return session.Delete();
  if (c.chosen == "watch") return session.Watch(/*logs=*/false);
  if (c.chosen == "logs") return session.Watch(/*logs=*/true);
  if (c.chosen == "checkpoints") return session.Checkpoints();
  if (c.chosen == "cluster") return session.Cluster();
  err << "accelctl: no job command chosen\n";
  return kInvalid;
}

}  // namespace accel::client
