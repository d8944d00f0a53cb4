#include "worker/reporter.h"

#include <algorithm>

#include "engine/base/process_memory.h"
#include "rpc/memory_stats.h"

namespace accel::worker {

v1::WorkerEvent MemoryEvent(const MemoryLedger& ledger, int64_t step, int64_t driver_used,
                            int64_t driver_total) {
  v1::WorkerEvent e;
  v1::MemoryEvent* m = e.mutable_memory();
  rpc::LedgerToProto(ledger, m);  // every pool and category, typed
  m->set_step(step);
  m->set_device_driver_used(driver_used);
  m->set_device_driver_total(driver_total);
  const ProcessMemory process = ReadProcessMemory();
  m->set_process_peak_rss(std::max<int64_t>(process.peak_rss, 0));
  m->set_cgroup_usage(std::max<int64_t>(process.cgroup.usage, 0));
  m->set_cgroup_limit(std::max<int64_t>(process.cgroup.limit, 0));
  return e;
}

v1::WorkerEvent MetricsEvent(const train::StepMetrics& s) {
  v1::WorkerEvent e;
  v1::MetricsEvent* m = e.mutable_metrics();
  m->set_step(s.step);
  m->set_total_steps(s.total_steps);
  m->set_loss(s.loss);
  m->set_lr(s.lr);
  m->set_grad_norm(s.grad_norm);
  m->set_clip_scale(s.clip_scale);
  m->set_tokens(s.tokens);
  m->set_tokens_per_s(s.tokens_per_s);
  m->set_step_seconds(s.step_seconds);
  // Exposed communication: time the trainer blocked on collectives; the rest is compute (with
  // whatever communication overlapped it).
  m->set_comm_seconds(s.comm_wait_seconds);
  m->set_compute_seconds(std::max(0.0, s.step_seconds - s.comm_wait_seconds));
  m->set_elapsed_seconds(s.elapsed_seconds);
  m->set_eta_seconds(s.eta_seconds);
  m->set_skipped(s.skipped);
  m->set_loss_scale(s.loss_scale);
  int64_t sent = 0, cross = 0, received = 0;
  for (const train::RankStats& r : s.ranks) {
    sent += r.bytes_sent;
    cross += r.bytes_sent_cross_node;
    received += r.bytes_received;
    m->add_rank_bytes_sent(r.bytes_sent);
    m->add_rank_bytes_sent_cross_node(r.bytes_sent_cross_node);
    m->add_rank_bytes_received(r.bytes_received);
  }
  m->set_bytes_sent(sent);
  m->set_bytes_sent_cross_node(cross);
  m->set_bytes_received(received);
  return e;
}

}  // namespace accel::worker
