#include "engine/comm/gloo_exchanger.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gloo/common/error.h"
#include "gloo/common/logging.h"
#include "gloo/context.h"
#include "gloo/transport/unbound_buffer.h"

namespace accel::comm {
namespace {

// splitmix64's finaliser: spreads (seq, step, bytes) over the 64-bit slot space.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Unregisters on every path out of Exchange, including exceptions.
class Registration {
 public:
  Registration(AbortRegistry* registry, gloo::transport::UnboundBuffer* buffer)
      : registry_(registry), buffer_(buffer), ok_(registry->Register(buffer)) {}
  ~Registration() {
    if (ok_) registry_->Unregister(buffer_);
  }
  bool ok() const { return ok_; }

 private:
  AbortRegistry* const registry_;
  gloo::transport::UnboundBuffer* const buffer_;
  const bool ok_;
};

}  // namespace

bool AbortRegistry::Register(gloo::transport::UnboundBuffer* buffer) {
  absl::MutexLock lock(&mu_);
  if (aborted_) return false;
  active_.push_back(buffer);
  return true;
}

void AbortRegistry::Unregister(gloo::transport::UnboundBuffer* buffer) {
  absl::MutexLock lock(&mu_);
  active_.erase(std::remove(active_.begin(), active_.end(), buffer), active_.end());
}

void AbortRegistry::AbortAll() {
  absl::MutexLock lock(&mu_);
  aborted_ = true;
  // The abort flags are sticky: a wait that starts after this returns at once.
  for (auto* buffer : active_) {
    buffer->abortWaitRecv();
    buffer->abortWaitSend();
  }
}

GlooExchanger::GlooExchanger(gloo::Context* context, AbortRegistry* aborts, std::string name,
                             uint64_t seq, absl::Duration timeout, absl::Time deadline)
    : context_(context),
      aborts_(aborts),
      name_(std::move(name)),
      seq_(seq),
      timeout_(timeout),
      deadline_(deadline),
      rank_(context->rank),
      size_(context->size),
      bytes_sent_to_(static_cast<size_t>(context->size), 0) {}

uint64_t GlooExchanger::Slot(int step, size_t bytes) const {
  return Mix(Mix(Mix(seq_) ^ static_cast<uint64_t>(step)) ^ static_cast<uint64_t>(bytes));
}

absl::Status GlooExchanger::Translate(const std::string& what, bool is_recv, int to,
                                      int from) const {
  // On a timeout gloo closes every pair, so the wait that timed out, not the pairs' state,
  // identifies the silent peer.
  const bool timed_out = absl::Now() >= deadline_ || absl::StrContains(what, "Timed out") ||
                         absl::StrContains(what, "timeout");
  if (timed_out) {
    const int peer = is_recv ? from : to;
    return absl::DeadlineExceededError(absl::StrCat(
        name_, ": ", is_recv ? "no data from" : "send not taken by", " rank ", peer, " within the ",
        absl::FormatDuration(timeout_), " deadline (gloo: ", what, ")"));
  }
  // A broken connection: find which of the two peers' pairs holds the error. A pair in error
  // rethrows it on any new request; a healthy one just queues a receive nobody will answer,
  // which is harmless because the caller closes every connection after a failure.
  std::vector<int> lost;
  for (int peer : {from, to}) {
    if (peer < 0 || (!lost.empty() && lost.back() == peer)) continue;
    char probe_byte = 0;
    try {
      auto probe = context_->createUnboundBuffer(&probe_byte, 1);
      probe->recv(peer, Slot(-1, 0));
    } catch (const std::exception&) {
      lost.push_back(peer);
    }
  }
  if (lost.empty()) lost.push_back(is_recv ? from : to);
  return absl::UnavailableError(absl::StrCat(name_, ": lost connection to rank",
                                             lost.size() > 1 ? "s " : " ",
                                             absl::StrJoin(lost, " and "), " (gloo: ", what, ")"));
}

// Both directions share one unbound buffer spanning the two regions, so an error on either
// peer's connection wakes whichever wait is in progress: with two buffers, a rank blocked
// receiving from a live peer would not notice that its send peer died until the deadline.
// The span may cover memory that is neither region; gloo only touches [offset, offset+nbytes).
absl::Status GlooExchanger::Exchange(int step, const void* send, size_t send_bytes, int to,
                                     void* recv, size_t recv_bytes, int from) {
  if (send_bytes == 0 && recv_bytes == 0) return absl::OkStatus();
  auto remaining = [&] {
    absl::Duration left = std::max(absl::ZeroDuration(), deadline_ - absl::Now());
    return std::chrono::milliseconds(
        absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
  };
  auto cancelled = [&] {
    return absl::CancelledError(
        absl::StrCat(name_, ": aborted because the communicator is being destroyed"));
  };
  const auto send_at = reinterpret_cast<uintptr_t>(send);
  const auto recv_at = reinterpret_cast<uintptr_t>(recv);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  if (send_bytes > 0) lo = std::min(lo, send_at), hi = std::max(hi, send_at + send_bytes);
  if (recv_bytes > 0) lo = std::min(lo, recv_at), hi = std::max(hi, recv_at + recv_bytes);
  bool in_recv = recv_bytes > 0;  // which wait a failure interrupted
  try {
    std::unique_ptr<gloo::transport::UnboundBuffer> buf =
        context_->createUnboundBuffer(reinterpret_cast<void*>(lo), hi - lo);
    Registration registration(aborts_, buf.get());
    if (!registration.ok()) return cancelled();
    if (recv_bytes > 0) buf->recv(from, Slot(step, recv_bytes), recv_at - lo, recv_bytes);
    // gloo only reads the region it sends from.
    if (send_bytes > 0) buf->send(to, Slot(step, send_bytes), send_at - lo, send_bytes);
    if (recv_bytes > 0) {
      in_recv = true;
      if (!buf->waitRecv(nullptr, remaining())) return cancelled();
      bytes_received_ += static_cast<int64_t>(recv_bytes);
    }
    if (send_bytes > 0) {
      in_recv = false;
      if (!buf->waitSend(nullptr, remaining())) return cancelled();
      bytes_sent_ += static_cast<int64_t>(send_bytes);
      bytes_sent_to_[static_cast<size_t>(to)] += static_cast<int64_t>(send_bytes);
    }
    return absl::OkStatus();
  } catch (const gloo::IoException& e) {
    return Translate(e.what(), in_recv, send_bytes > 0 ? to : -1, recv_bytes > 0 ? from : -1);
  } catch (const gloo::EnforceNotMet& e) {
    return absl::InternalError(absl::StrCat(name_, ": gloo check failed: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(name_, ": gloo error: ", e.what()));
  }
}

}  // namespace accel::comm
