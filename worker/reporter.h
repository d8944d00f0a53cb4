// The worker's half of acceld's ReportEvents stream (Reporter) and the events a training run
// sends on it: metrics records, memory records (the ledger, plus the driver's view on cuda
// workers) and heartbeats.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "accel/v1/worker.grpc.pb.h"
#include "engine/base/memory_ledger.h"
#include "engine/train/metrics.h"
#include "rpc/channel.h"
#include "rpc/status.h"

namespace accel::worker {

namespace v1 = accel::v1;

// The worker's half of ReportEvents: one client stream shared by the training thread and the
// heartbeat thread (gRPC allows one writer at a time, hence the mutex). Once a write fails the
// stream is broken for good and Finish reports why.
class Reporter {
 public:
  Reporter(v1::WorkerService::Stub* stub, const std::string& token, int rank) : rank_(rank) {
    rpc::Authorize(ctx_, token);
    writer_ = stub->ReportEvents(&ctx_, &response_);
  }
  ~Reporter() { StopHeartbeats(); }

  bool Send(v1::WorkerEvent event) {
    event.set_rank(rank_);
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return false;
    if (!writer_->Write(event)) broken_ = true;
    return !broken_;
  }
  bool broken() {
    std::lock_guard<std::mutex> lock(mu_);
    return broken_;
  }
  void StartHeartbeats(absl::Duration every, const std::atomic<int64_t>* step) {
    heartbeat_ = std::thread([this, every, step] {
      std::unique_lock<std::mutex> lock(stop_mu_);
      while (!stop_cv_.wait_for(lock, absl::ToChronoMilliseconds(every), [this] { return stop_; })) {
        v1::WorkerEvent hb;
        hb.mutable_heartbeat()->set_step(step->load());
        lock.unlock();
        const bool ok = Send(hb);
        lock.lock();
        if (!ok) return;
      }
    });
  }
  void StopHeartbeats() {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    if (heartbeat_.joinable()) heartbeat_.join();
  }
  [[nodiscard]] absl::Status Finish() {
    StopHeartbeats();
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_) writer_->WritesDone();
    return rpc::FromGrpc(writer_->Finish());
  }

 private:
  const int rank_;
  grpc::ClientContext ctx_;
  v1::ReportEventsResponse response_;
  std::unique_ptr<grpc::ClientWriter<v1::WorkerEvent>> writer_;
  std::mutex mu_;
  bool broken_ = false;
  std::thread heartbeat_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

// A memory record of `ledger` after `step` (-1: after setup). driver_used / driver_total: the
// GPU's bytes in use by every process and its capacity (cuda workers; 0 otherwise).
v1::WorkerEvent MemoryEvent(const MemoryLedger& ledger, int64_t step, int64_t driver_used = 0,
                            int64_t driver_total = 0);
v1::WorkerEvent MetricsEvent(const train::StepMetrics& s);

}  // namespace accel::worker
