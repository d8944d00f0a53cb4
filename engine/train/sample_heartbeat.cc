// The ranks' rendezvous around a sample (sample_heartbeat.h).
#include "engine/train/sample_heartbeat.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::train {
namespace {

// What rank 0 contributes to each all-reduce (every other rank adds 0).
constexpr float kBeat = 1, kDone = 2, kFailed = 3;

absl::Status Exchange(comm::Communicator* comm, float* value) {
  return comm->AllReduce(value, 1, DType::kF32)->Wait();
}

}  // namespace

SampleHeartbeat::SampleHeartbeat(comm::Communicator* comm, absl::Duration interval,
                                 absl::Duration limit)
    : comm_(comm), interval_(interval), limit_(limit) {}

SampleHeartbeat::~SampleHeartbeat() {
  if (thread_.joinable()) (void)Finish(/*sample_ok=*/false);
}

void SampleHeartbeat::Start() { thread_ = std::thread([this] { Beat(); }); }

void SampleHeartbeat::Beat() {
  const absl::Time give_up = absl::Now() + limit_;
  std::unique_lock<std::mutex> lock(mu_);
  while (!finishing_) {
    cv_.wait_for(lock, absl::ToChronoNanoseconds(interval_), [this] { return finishing_; });
    if (finishing_) break;
    if (absl::Now() >= give_up) {
      beat_status_ = absl::DeadlineExceededError(absl::StrCat(
          "the sample ran for more than ", absl::FormatDuration(limit_),
          "; the other ranks were left to the communicator's deadline"));
      return;
    }
    lock.unlock();
    float beat = kBeat;
    absl::Status s = Exchange(comm_, &beat);
    lock.lock();
    if (!s.ok()) {
      beat_status_ = std::move(s);
      return;
    }
  }
}

absl::Status SampleHeartbeat::Finish(bool sample_ok) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  ACCEL_RETURN_IF_ERROR(beat_status_);
  float outcome = sample_ok ? kDone : kFailed;
  return Exchange(comm_, &outcome);
}

absl::Status WaitForRankZeroSample(comm::Communicator* comm) {
  while (true) {
    float value = 0;
    ACCEL_RETURN_IF_ERROR(Exchange(comm, &value));
    if (value == kBeat) continue;
    if (value == kDone) return absl::OkStatus();
    if (value == kFailed) {
      return absl::AbortedError(absl::StrCat(
          "rank 0 failed its sample (train.sample_every); its own error says why (rank ",
          comm->rank(), " waited for it)"));
    }
    return absl::InternalError(
        absl::StrCat("sample rendezvous: unexpected value ", value, " from rank 0"));
  }
}

}  // namespace accel::train
