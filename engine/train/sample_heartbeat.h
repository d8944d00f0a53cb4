// The ranks' rendezvous around a sample (train.sample_every; sampling.h). Rank 0 generates alone
// while the other ranks wait for it; left to the next step's collective, they would give up
// after the communicator's deadline (comm_timeout_s), so a long sample of a large model would
// fail the gang. Instead every rank waits here, in a chain of one-float all-reduces that rank 0
// feeds from a thread of its own: a beat at least every `interval` while it samples, then the
// outcome. Each all-reduce completes well within the deadline, however long the sample takes.
//
// Protocol (the sum over ranks of one float; only rank 0 contributes): kBeat, ..., kBeat, then
// kDone or kFailed. A rank that sees kFailed returns Aborted naming rank 0, so a sample that
// fails on rank 0 fails every rank at once with its cause instead of a deadline later.
// The wait still has a deadline: rank 0 stops beating once the sample has run for `limit`, so a
// sample that hangs fails the gang on the communicator's deadline after it.
// While a heartbeat runs, rank 0 must issue no other collective on `comm` (the sample uses
// none).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/comm/communicator.h"

namespace accel::train {

// Rank 0's side. Start() begins the beats; Finish() sends the outcome and joins the thread
// (the destructor finishes as failed if Finish was not called). An error of the beats
// themselves (a peer gone), or DeadlineExceeded once `limit` passed, is returned by Finish, which
// then sends no outcome.
class SampleHeartbeat {
 public:
  SampleHeartbeat(comm::Communicator* comm, absl::Duration interval, absl::Duration limit);
  ~SampleHeartbeat();
  SampleHeartbeat(const SampleHeartbeat&) = delete;
  SampleHeartbeat& operator=(const SampleHeartbeat&) = delete;

  void Start();
  [[nodiscard]] absl::Status Finish(bool sample_ok);

 private:
  void Beat();
  comm::Communicator* comm_;
  absl::Duration interval_;
  absl::Duration limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finishing_ = false;
  absl::Status beat_status_;  // the first failed beat, under mu_
  std::thread thread_;
};

// The other ranks' side: waits for rank 0's outcome, one beat at a time (each within the
// communicator's deadline). OK on kDone; Aborted on kFailed; the communicator's error when rank 0
// stops beating.
[[nodiscard]] absl::Status WaitForRankZeroSample(comm::Communicator* comm);

}  // namespace accel::train
