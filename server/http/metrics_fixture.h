// A daemon's worth of state for /metrics without a daemon: an in-memory store, the event log
// feeding a JobTelemetry, a registry with queued jobs and running jobs whose ranks have
// reported metrics, memory and checkpoint events. Shared by metrics_page_test and
// bench/metrics_bench (the size and render time of 1000 queued jobs and 100 running ranks).
// Header-only test support.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "accel/v1/job.pb.h"
#include "engine/base/env.h"
#include "job/job_file.h"
#include "engine/base/memory_ledger.h"
#include "rpc/memory_stats.h"
#include "rpc/memory_stats_test_util.h"
#include "server/services/convert.h"
#include "server/core/event_log.h"
#include "server/core/job_registry.h"
#include "server/http/job_telemetry.h"
#include "server/http/metrics_page.h"
#include "server/core/state_store.h"

namespace accel::server::testing {

class MetricsFixture {
 public:
  // Ok() is false (and error() says why) when a step failed.
  MetricsFixture() {
    auto store = StateStore::Open(":memory:");
    if (!Check(store.status())) return;
    store_ = std::move(*store);
    events_ = std::make_unique<EventLog>(store_.get(), Env::Default());
    events_->SetObserver([this](const std::vector<Event>& b) { telemetry_.Observe(b); });
    auto registry = JobRegistry::Load(store_.get(), events_.get(), Env::Default());
    if (!Check(registry.status())) return;
    registry_ = std::move(*registry);
  }

  // A queued job; returns its id.
  std::string AddQueued(const std::string& name, int slots) {
    JobRecord j;
    j.name = name;
    j.spec_json = spec_json_;  // a real spec's size: the registry copies it per listing
    j.slots = slots;
    auto created = registry_->Create(j);
    if (!Check(created.status())) return "";
    return created->id;
  }

  // A RUNNING job of `ranks` ranks (attempt 1) that reported `steps` metrics records (the last
  // at step steps-1, with each rank's traffic), one memory record per rank, and a checkpoint.
  std::string AddRunning(const std::string& name, int ranks, int steps) {
    const std::string id = AddQueued(name, ranks);
    if (id.empty()) return "";
    if (!Check(registry_->Transition(id, JobState::kStarting, "", [](JobRecord& j) {
                            j.attempt = 1;
                          }).status()) ||
        !Check(registry_->Transition(id, JobState::kRunning, "").status())) {
      return "";
    }
    for (int s = 0; s < steps; ++s) {
      accel::v1::MetricsEvent m;
      m.set_step(s);
      m.set_total_steps(1000);
      m.set_loss(4.0f - 0.01f * static_cast<float>(s));
      m.set_lr(3e-4f);
      m.set_grad_norm(1.5);
      m.set_tokens_per_s(1234.5);
      m.set_loss_scale(65536);
      m.set_step_seconds(0.25);
      m.set_comm_seconds(0.05);
      for (int r = 0; s == steps - 1 && r < ranks; ++r) {
        m.add_rank_bytes_sent(1000 + r);
        m.add_rank_bytes_received(2000 + r);
      }
      Append(id, -1, EventKind::kMetrics, MessageToJson(m));
    }
    for (int r = 0; r < ranks; ++r) {
      // Rank r's ledger: params 100(r+1) now, 200(r+1) at peak; grads 50 / 60; host optimizer
      // state 4096. Even ranks send it typed; odd ranks' records are as stored before issue 29
      // (the ledger as JSON, the compute pool still called "device"), which read the same.
      MemoryLedger ledger;
      ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 200 * (r + 1));
      ledger.Charge(MemoryPool::kDevice, MemoryCategory::kGrads, 60);
      ledger.Release(MemoryPool::kDevice, MemoryCategory::kParams, 100 * (r + 1));
      ledger.Release(MemoryPool::kDevice, MemoryCategory::kGrads, 10);
      ledger.Charge(MemoryPool::kHost, MemoryCategory::kOptimizerState, 4096);
      accel::v1::MemoryEvent mem;
      mem.set_step(steps - 1);
      if (r % 2 == 0) {
        rpc::LedgerToProto(ledger, &mem);
        Append(id, r, EventKind::kMemory, MessageToJson(mem));
        continue;
      }
      Append(id, r, EventKind::kMemory, rpc::testing::StoredBeforeIssue29(mem, absl::StrCat(
          R"({"device":{"params":{"current":)", 100 * (r + 1), R"(,"peak":)", 200 * (r + 1),
          R"(},"grads":{"current":50,"peak":60},"total":{"current":)", 150 + 100 * r,
          R"(,"peak":)", 260 + 200 * r,
          R"(}},"host":{"optimizer_state":{"current":4096,"peak":4096},"total":{"current":4096,"peak":4096}}})")));
    }
    accel::v1::CheckpointEvent ckpt;
    ckpt.set_step(steps);
    ckpt.set_bytes(1 << 20);
    ckpt.set_seconds(0.5);
    Append(id, -1, EventKind::kCheckpoint, MessageToJson(ckpt));
    return id;
  }

  MetricsSources Sources(int cpu_slots, int used) const {
    MetricsSources s;
    s.registry = registry_.get();
    s.events = events_.get();
    s.telemetry = &telemetry_;
    s.version = "accel test";
    s.cluster = [cpu_slots, used] {
      ClusterView v;
      v.pools.push_back({"cpu", cpu_slots, cpu_slots - used, {}, {}});
      return v;
    };
    return s;
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  JobRegistry& registry() { return *registry_; }
  EventLog& events() { return *events_; }
  JobTelemetry& telemetry() { return telemetry_; }

 private:
  bool Check(const absl::Status& s) {
    if (!s.ok() && error_.empty()) error_ = std::string(s.message());
    return s.ok();
  }
  void Append(const std::string& id, int rank, EventKind kind, std::string body) {
    Event e;
    e.job_id = id;
    e.attempt = 1;
    e.rank = rank;
    e.kind = kind;
    e.body_json = std::move(body);
    Check(events_->Append(std::move(e)).status());
  }

  std::string error_;
  const std::string spec_json_ = job::JobSpecToJson(job::DefaultJobSpec());
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<EventLog> events_;
  JobTelemetry telemetry_;
  std::unique_ptr<JobRegistry> registry_;
};

}  // namespace accel::server::testing
