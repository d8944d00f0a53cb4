// Internal to the gloo backend: the Exchanger that one operation uses to talk to its peers over
// a gloo context's point-to-point (unbound buffer) API, and the registry that lets the
// communicator's destructor abort an operation stuck in a gloo wait.
//
// Gloo reports every failure by exception. Exchange catches them all and returns a Status:
// DeadlineExceeded when the operation's deadline passed (gloo's own timeout), Unavailable when
// the connection to a peer broke (closed, reset), Internal for a gloo invariant failure, and
// Cancelled when the registry aborted the wait. Each message names the operation, this rank and
// the peer rank the failed send or receive was addressed to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/comm/ring_algorithms.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace accel::comm {

// The gloo buffers some thread is waiting on right now. Thread-safe.
class AbortRegistry {
 public:
  // False once AbortAll has run: the caller must not start a wait.
  [[nodiscard]] bool Register(gloo::transport::UnboundBuffer* buffer);
  void Unregister(gloo::transport::UnboundBuffer* buffer);
  // Wakes every registered wait (it returns "aborted") and refuses later registrations.
  void AbortAll();

 private:
  absl::Mutex mu_;
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<gloo::transport::UnboundBuffer*> active_ ABSL_GUARDED_BY(mu_);
};

class GlooExchanger : public Exchanger {
 public:
  // `name` labels error messages ("all_reduce #3 on rank 1"). `seq` is the operation's issue
  // number, the same on every rank; with the step and the byte count it forms the gloo slot, so
  // a rank that disagrees on the count (a caller bug) waits on a slot nobody sends to and times
  // out instead of corrupting memory.
  GlooExchanger(gloo::Context* context, AbortRegistry* aborts, std::string name, uint64_t seq,
                absl::Duration timeout, absl::Time deadline);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::Status Exchange(int step, const void* send, size_t send_bytes, int to, void* recv,
                        size_t recv_bytes, int from) override;

  // Bytes of completed sends and receives so far, and the sends' bytes by destination rank.
  int64_t bytes_sent() const { return bytes_sent_; }
  int64_t bytes_received() const { return bytes_received_; }
  const std::vector<int64_t>& bytes_sent_to() const { return bytes_sent_to_; }

 private:
  uint64_t Slot(int step, size_t bytes) const;
  // `to` / `from` are -1 for a direction the exchange did not use.
  absl::Status Translate(const std::string& what, bool is_recv, int to, int from) const;

  gloo::Context* const context_;
  AbortRegistry* const aborts_;
  const std::string name_;
  const uint64_t seq_;
  const absl::Duration timeout_;
  const absl::Time deadline_;
  const int rank_;
  const int size_;
  int64_t bytes_sent_ = 0;
  int64_t bytes_received_ = 0;
  std::vector<int64_t> bytes_sent_to_;  // size_ entries
};

}  // namespace accel::comm
