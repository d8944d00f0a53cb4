#include "server/http/job_telemetry.h"

#include <algorithm>

#include "rpc/memory_stats.h"
#include "server/services/convert.h"

namespace accel::server {

void JobTelemetry::Observe(const std::vector<Event>& events) {
  absl::MutexLock lock(&mu_);
  for (const Event& e : events) ObserveOne(e);
}

void JobTelemetry::ObserveOne(const Event& e) {
  if (e.kind == EventKind::kLog) return;
  absl::StatusOr<accel::v1::Event> p = EventToProto(e);
  if (!p.ok()) return;
  if (p->has_state()) {
    const auto state = static_cast<JobState>(p->state().state());
    if (IsTerminal(state)) {
      jobs_.erase(e.job_id);
    } else {
      jobs_[e.job_id].attempt = std::max(jobs_[e.job_id].attempt, e.attempt);
    }
    return;
  }
  JobTelemetrySnapshot& job = jobs_[e.job_id];
  if (e.attempt > job.attempt) {  // a new gang: the old ranks' numbers are history
    job.attempt = e.attempt;
    job.ranks.clear();
  }
  if (p->has_metrics()) {
    const accel::v1::MetricsEvent& m = p->metrics();
    job.has_metrics = true;
    job.step = m.step();
    job.total_steps = m.total_steps();
    job.loss = m.loss();
    job.lr = m.lr();
    job.grad_norm = m.grad_norm();
    job.tokens_per_s = m.tokens_per_s();
    job.loss_scale = m.loss_scale() > 0 ? m.loss_scale() : 1.0;  // absent in older events
    job.step_seconds = m.step_seconds();
    job.comm_seconds = m.comm_seconds();
    for (int r = 0; r < m.rank_bytes_sent_size(); ++r) {
      job.ranks[r].step_bytes_sent = m.rank_bytes_sent(r);
    }
    for (int r = 0; r < m.rank_bytes_received_size(); ++r) {
      job.ranks[r].step_bytes_received = m.rank_bytes_received(r);
    }
  } else if (p->has_memory() && e.rank >= 0) {
    RankTelemetry& rank = job.ranks[e.rank];
    rank.memory = rpc::MemoryFigures(p->memory());
    rank.memory_step = p->memory().step();
  } else if (p->has_eval()) {
    job.best_eval_loss = job.has_eval ? std::min(job.best_eval_loss, p->eval().eval_loss())
                                      : p->eval().eval_loss();
    job.has_eval = true;
    job.eval_loss = p->eval().eval_loss();
    job.eval_step = p->eval().step();
  } else if (p->has_checkpoint()) {
    ++job.checkpoints;
    job.checkpoint_bytes += p->checkpoint().bytes();
    job.checkpoint_seconds += p->checkpoint().seconds();
    job.last_checkpoint_step = p->checkpoint().step();
  }
}

bool JobTelemetry::Visit(const std::string& job_id,
                         const std::function<void(const JobTelemetrySnapshot&)>& visit) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  visit(it->second);
  return true;
}

size_t JobTelemetry::jobs() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

}  // namespace accel::server
