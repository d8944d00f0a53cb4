#include "server/http/metrics_page.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace accel::server {
namespace {

using Type = PrometheusText::Type;

constexpr std::array<JobState, 7> kStates = {
    JobState::kQueued,    JobState::kStarting, JobState::kRunning,  JobState::kRestarting,
    JobState::kSucceeded, JobState::kFailed,   JobState::kCancelled};

void RenderDaemon(const MetricsSources& s, const std::vector<JobRecord>& jobs,
                  PrometheusText& out) {
  out.Family("accel_build_info", "acceld's version (always 1).", Type::kGauge);
  out.Sample("accel_build_info", {{"version", s.version}}, 1);

  std::array<int64_t, kStates.size()> by_state{};
  for (const JobRecord& j : jobs) {
    for (size_t i = 0; i < kStates.size(); ++i) by_state[i] += j.state == kStates[i];
  }
  out.Family("accel_jobs", "Jobs acceld knows, by state.", Type::kGauge);
  for (size_t i = 0; i < kStates.size(); ++i) {
    const std::string state = absl::AsciiStrToLower(JobStateName(kStates[i]));
    out.Sample("accel_jobs", {{"state", state}}, static_cast<double>(by_state[i]));
  }

  const ClusterView cluster = s.cluster();
  out.Family("accel_queue_length", "Jobs waiting for slots in acceld's pools.", Type::kGauge);
  out.Sample("accel_queue_length", {}, static_cast<double>(cluster.queue.size()));
  out.Family("accel_slots", "Slots (one rank each) in a pool.", Type::kGauge);
  for (const PoolView& p : cluster.pools) {
    out.Sample("accel_slots", {{"pool", p.device}}, p.total_slots);
  }
  out.Family("accel_slots_in_use", "Slots of a pool held by running jobs.", Type::kGauge);
  for (const PoolView& p : cluster.pools) {
    out.Sample("accel_slots_in_use", {{"pool", p.device}}, p.total_slots - p.free_slots);
  }

  out.Family("accel_watchers", "Open event streams (WatchJob calls).", Type::kGauge);
  out.Sample("accel_watchers", {}, static_cast<double>(s.events->subscribers()));
  out.Family("accel_watch_dropped_events_total",
             "Events a slow watcher's queue dropped (it reads them back from the database).",
             Type::kCounter);
  out.Sample("accel_watch_dropped_events_total", {},
             static_cast<double>(s.events->dropped_events()));
}

// A per-job family: its HELP/TYPE, then one sample per unfinished job that has the number.
struct JobFamily {
  const char* name;
  const char* help;
  Type type;
  double (*value)(const JobRecord&, const JobTelemetrySnapshot&);
  bool needs_metrics;  // only once a metrics record arrived
  bool needs_eval = false;  // only once an eval record arrived
};

constexpr JobFamily kJobFamilies[] = {
    {"accel_job_attempt", "The job's current attempt (1 for its first start).", Type::kGauge,
     [](const JobRecord& j, const JobTelemetrySnapshot&) { return double(j.attempt); }, false},
    {"accel_job_restarts_total", "Failures that used one of the job's max_restarts.",
     Type::kCounter,
     [](const JobRecord& j, const JobTelemetrySnapshot&) { return double(j.restarts_used); },
     false},
    {"accel_job_step", "The newest optimizer step reported (0-based).", Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return double(t.step); }, true},
    {"accel_job_target_steps", "Optimizer steps the job runs in all.", Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return double(t.total_steps); }, true},
    {"accel_job_loss", "Training loss of the newest step.", Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.loss; }, true},
    {"accel_job_eval_loss",
     "Eval loss (mean cross-entropy over the unmasked eval targets) of the newest evaluation.",
     Type::kGauge, [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.eval_loss; },
     false, true},
    {"accel_job_eval_step", "Steps done before the newest evaluation (0: the starting weights).",
     Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return double(t.eval_step); }, false,
     true},
    {"accel_job_learning_rate", "Learning rate of the newest step.", Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.lr; }, true},
    {"accel_job_grad_norm", "Global gradient L2 norm (before clipping) of the newest step.",
     Type::kGauge, [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.grad_norm; },
     true},
    {"accel_job_tokens_per_second", "Training throughput of the newest step, all ranks.",
     Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.tokens_per_s; }, true},
    {"accel_job_loss_scale", "fp16 dynamic loss scale (1 without fp16).", Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.loss_scale; }, true},
    {"accel_job_step_seconds", "Wall time of the newest step.", Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.step_seconds; }, true},
    {"accel_job_exposed_communication_seconds",
     "Time the newest step waited on collectives (communication not hidden by compute).",
     Type::kGauge,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.comm_seconds; }, true},
    {"accel_job_checkpoints_total", "Checkpoints committed since acceld followed the job.",
     Type::kCounter,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return double(t.checkpoints); },
     false},
    {"accel_job_checkpoint_bytes_total", "Bytes those checkpoints wrote, all ranks.",
     Type::kCounter,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return double(t.checkpoint_bytes); },
     false},
    {"accel_job_checkpoint_seconds_total", "Seconds spent writing those checkpoints.",
     Type::kCounter,
     [](const JobRecord&, const JobTelemetrySnapshot& t) { return t.checkpoint_seconds; }, false},
};

void RenderJobs(const MetricsSources& s, const std::vector<JobRecord>& jobs,
                PrometheusText& out) {
  std::vector<const JobRecord*> active;
  for (const JobRecord& j : jobs) {
    if (!IsTerminal(j.state) && j.state != JobState::kQueued) active.push_back(&j);
  }
  static const JobTelemetrySnapshot kNone;
  out.Family("accel_job_info", "One per unfinished, started job: its name and state.",
             Type::kGauge);
  for (const JobRecord* j : active) {
    const std::string state = absl::AsciiStrToLower(JobStateName(j->state));
    out.Sample("accel_job_info", {{"job_id", j->id}, {"job_name", j->name}, {"state", state}}, 1);
  }
  for (const JobFamily& f : kJobFamilies) {
    out.Family(f.name, f.help, f.type);
    for (const JobRecord* j : active) {
      const bool seen = s.telemetry->Visit(j->id, [&](const JobTelemetrySnapshot& t) {
        if ((!f.needs_metrics || t.has_metrics) && (!f.needs_eval || t.has_eval)) {
          out.Sample(f.name, {{"job_id", j->id}}, f.value(*j, t));
        }
      });
      if (!seen && !f.needs_metrics && !f.needs_eval) out.Sample(f.name, {{"job_id", j->id}}, f.value(*j, kNone));
    }
  }
  // Per rank: memory, then traffic.
  const struct {
    const char* name;
    const char* help;
    bool peak;
  } kMemory[] = {
      {"accel_rank_memory_bytes", "Bytes a rank holds now, by pool and category.", false},
      {"accel_rank_memory_peak_bytes", "The most bytes a rank has held, by pool and category.",
       true}};
  for (const auto& m : kMemory) {
    out.Family(m.name, m.help, Type::kGauge);
    for (const JobRecord* j : active) {
      s.telemetry->Visit(j->id, [&](const JobTelemetrySnapshot& t) {
        for (const auto& [rank, r] : t.ranks) {
          const std::string rank_label = absl::StrCat(rank);
          for (const auto& [pool, categories] : r.memory) {
            for (const auto& [category, bytes] : categories) {
              out.Sample(m.name,
                         {{"job_id", j->id}, {"rank", rank_label}, {"pool", pool},
                          {"category", category}},
                         static_cast<double>(m.peak ? bytes.peak : bytes.current));
            }
          }
        }
      });
    }
  }
  const struct {
    const char* name;
    const char* help;
    int64_t RankTelemetry::*field;
  } kTraffic[] = {
      {"accel_rank_step_sent_bytes",
       "Bytes a rank sent during the newest step with rank statistics.",
       &RankTelemetry::step_bytes_sent},
      {"accel_rank_step_received_bytes",
       "Bytes a rank received during the newest step with rank statistics.",
       &RankTelemetry::step_bytes_received}};
  for (const auto& f : kTraffic) {
    out.Family(f.name, f.help, Type::kGauge);
    for (const JobRecord* j : active) {
      s.telemetry->Visit(j->id, [&](const JobTelemetrySnapshot& t) {
        for (const auto& [rank, r] : t.ranks) {
          if (r.*f.field < 0) continue;
          out.Sample(f.name, {{"job_id", j->id}, {"rank", absl::StrCat(rank)}},
                     static_cast<double>(r.*f.field));
        }
      });
    }
  }
}

}  // namespace

std::string RenderMetrics(const MetricsSources& s) {
  const std::vector<JobRecord> jobs = s.registry->List();
  PrometheusText out;
  RenderDaemon(s, jobs, out);
  RenderJobs(s, jobs, out);
  if (s.rpc != nullptr) s.rpc->Render(out);
  return out.Take();
}

}  // namespace accel::server
