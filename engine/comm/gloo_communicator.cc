#include "engine/comm/gloo_communicator.h"

#include <signal.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/base/status_macros.h"
#include "engine/comm/gloo_exchanger.h"
#include "engine/comm/gloo_store_adapter.h"
#include "engine/comm/ring_algorithms.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"

namespace accel::comm {
namespace {

class WorkImpl : public Work {
 public:
  explicit WorkImpl(std::string name) : name_(std::move(name)) {}

  absl::Status Wait(absl::Duration timeout) override {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(&done_), timeout)) {
      return absl::DeadlineExceededError(
          absl::StrCat(name_, " not done after waiting ", absl::FormatDuration(timeout)));
    }
    return status_;
  }

  bool Done() const override {
    absl::MutexLock lock(&mu_);
    return done_;
  }

  void Complete(absl::Status status) {
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
    done_ = true;
  }

 private:
  const std::string name_;
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// A group of one has no peers; the algorithms never call Exchange at size 1.
class SoloExchanger : public Exchanger {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::Status Exchange(int, const void*, size_t, int, void*, size_t, int) override {
    return absl::InternalError("Exchange called in a group of one");
  }
};

using OpBody = std::function<absl::Status(Exchanger& ex, std::vector<char>* scratch)>;

struct PendingOp {
  OpKind kind = OpKind::kBarrier;
  uint64_t seq = 0;
  OpBody body;
  std::shared_ptr<WorkImpl> work;
};

class GlooCommunicator : public Communicator {
 public:
  // device and context are null for a group of one.
  GlooCommunicator(int rank, int size, absl::Duration timeout, std::vector<int> node_of_rank,
                   std::shared_ptr<gloo::transport::Device> device,
                   std::shared_ptr<gloo::rendezvous::Context> context)
      : rank_(rank),
        size_(size),
        timeout_(timeout),
        node_of_rank_(std::move(node_of_rank)),
        device_(std::move(device)),
        context_(std::move(context)),
        thread_([this] { Loop(); }) {}

  ~GlooCommunicator() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    aborts_.AbortAll();
    thread_.join();
    std::deque<PendingOp> rest;
    {
      absl::MutexLock lock(&mu_);
      rest.swap(queue_);
    }
    for (PendingOp& op : rest) {
      op.work->Complete(absl::CancelledError(
          absl::StrCat(Name(op.kind, op.seq), ": communicator destroyed before it ran")));
    }
    // Pairs close before the device that polls them stops.
    context_.reset();
    device_.reset();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::shared_ptr<Work> AllGather(const void* send, void* recv, size_t count,
                                  DType dtype) override {
    const size_t esize = DTypeSize(dtype);
    const ChunkLayout layout{count * size_, count};
    return Issue(OpKind::kAllGather, [=, this](Exchanger& ex, std::vector<char>*) {
      if (count > 0 && (send == nullptr || recv == nullptr)) return NullBuffer();
      char* own = static_cast<char*>(recv) + layout.Offset(rank_) * esize;
      if (count > 0 && own != send) std::memcpy(own, send, count * esize);
      return RingAllGather(ex, recv, layout, dtype);
    });
  }

  std::shared_ptr<Work> ReduceScatter(const void* send, void* recv, size_t count,
                                      DType dtype) override {
    const ChunkLayout layout{count * size_, count};
    return Issue(OpKind::kReduceScatter, [=](Exchanger& ex, std::vector<char>* scratch) {
      if (count > 0 && (send == nullptr || recv == nullptr)) return NullBuffer();
      return RingReduceScatter(ex, send, recv, layout, dtype, scratch);
    });
  }

  // The reduce-scatter's message steps are 0..size-2 and the all-gather's follow them.
  std::shared_ptr<Work> AllReduce(void* buf, size_t count, DType dtype) override {
    const size_t esize = DTypeSize(dtype);
    const ChunkLayout layout = PaddedLayout(count, size_);
    return Issue(OpKind::kAllReduce, [=, this](Exchanger& ex, std::vector<char>* scratch) {
      if (count > 0 && buf == nullptr) return NullBuffer();
      char* own = static_cast<char*>(buf) + layout.Offset(rank_) * esize;
      ACCEL_RETURN_IF_ERROR(RingReduceScatter(ex, buf, own, layout, dtype, scratch));
      return RingAllGather(ex, buf, layout, dtype, /*first_step=*/size_ - 1);
    });
  }

  std::shared_ptr<Work> Broadcast(void* buf, size_t count, DType dtype, int root) override {
    const size_t bytes = count * DTypeSize(dtype);
    const int size = size_;
    return Issue(OpKind::kBroadcast, [=](Exchanger& ex, std::vector<char>*) {
      if (root < 0 || root >= size) {
        return absl::InvalidArgumentError(
            absl::StrCat("broadcast root ", root, " outside the group of ", size));
      }
      if (count > 0 && buf == nullptr) return NullBuffer();
      return TreeBroadcast(ex, buf, bytes, root);
    });
  }

  std::shared_ptr<Work> Barrier() override {
    return Issue(OpKind::kBarrier,
                 [](Exchanger& ex, std::vector<char>*) { return DisseminationBarrier(ex); });
  }

  CommStats stats() const override {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  static absl::Status NullBuffer() {
    return absl::InvalidArgumentError("null buffer with a nonzero count");
  }

  std::string Name(OpKind kind, uint64_t seq) const {
    return absl::StrCat(std::string(OpKindName(kind)), " #", seq, " on rank ", rank_);
  }

  // Numbers the operation (the same number on every rank, since all issue the same sequence)
  // and queues it, or fails it at once if the communicator is already broken.
  std::shared_ptr<Work> Issue(OpKind kind, OpBody body) {
    absl::MutexLock lock(&mu_);
    const uint64_t seq = next_seq_++;
    stats_.ops[static_cast<int>(kind)].calls++;
    auto work = std::make_shared<WorkImpl>(Name(kind, seq));
    if (!broken_.ok()) {
      work->Complete(broken_);
    } else if (stopping_) {
      work->Complete(absl::CancelledError(Name(kind, seq) + ": communicator is being destroyed"));
    } else {
      queue_.push_back(PendingOp{kind, seq, std::move(body), work});
    }
    return work;
  }

  void Loop() {
    while (true) {
      PendingOp op;
      absl::Status broken;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](GlooCommunicator* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
              return self->stopping_ || !self->queue_.empty();
            },
            this));
        if (stopping_) return;
        op = std::move(queue_.front());
        queue_.pop_front();
        broken = broken_;
      }
      absl::Status status = broken.ok() ? Execute(op) : broken;
      if (!status.ok() && broken.ok()) Break(status);
      op.work->Complete(std::move(status));
    }
  }

  absl::Status Execute(PendingOp& op) {
    if (context_ == nullptr) {
      SoloExchanger solo;
      return op.body(solo, &scratch_);
    }
    const absl::Time start = absl::Now();
    GlooExchanger ex(context_.get(), &aborts_, Name(op.kind, op.seq), op.seq, timeout_,
                     start + timeout_);
    absl::Status status = op.body(ex, &scratch_);
    absl::MutexLock lock(&mu_);
    CommStats::PerOp& counters = stats_.ops[static_cast<int>(op.kind)];
    counters.bytes_sent += ex.bytes_sent();
    counters.bytes_received += ex.bytes_received();
    if (!node_of_rank_.empty()) {
      for (int peer = 0; peer < size_; ++peer) {
        if (node_of_rank_[peer] != node_of_rank_[rank_]) {
          counters.bytes_sent_cross_node += ex.bytes_sent_to()[peer];
        }
      }
    }
    return status;
  }

  // After a failure the ranks have diverged: remember the error for every later operation, and
  // close every connection so the peers fail now (Unavailable) rather than at their deadline,
  // and so gloo can no longer write into a buffer whose operation has returned.
  void Break(const absl::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (broken_.ok()) broken_ = status;
    }
    if (context_ == nullptr) return;
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
      // Already closed by the error; nothing more to release.
    }
  }

  const int rank_;
  const int size_;
  const absl::Duration timeout_;
  const std::vector<int> node_of_rank_;  // empty: one node
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  AbortRegistry aborts_;
  std::vector<char> scratch_;  // used only by the thread

  mutable absl::Mutex mu_;
  std::deque<PendingOp> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  CommStats stats_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;  // last: starts after everything it uses exists
};

// Operations are numbered from 0; the creation barrier's messages use a sequence number no
// operation reaches.
constexpr uint64_t kRendezvousSeq = ~uint64_t{0};

// gloo writes to its sockets with writev, which raises SIGPIPE when the peer has gone; the
// default action would kill the process instead of letting the write fail with EPIPE (which gloo
// turns into an error, and we into Unavailable). Ignore it, unless the program chose a handler.
void IgnoreSigpipeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current;
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

bool LooksLikeTimeout(const std::string& what) {
  return absl::StrContains(what, "Timed out") || absl::StrContains(what, "timeout") ||
         absl::StrContains(what, "Timeout");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(Store* store,
                                                                     const std::string& group_name,
                                                                     int rank, int size,
                                                                     const GlooOptions& options) {
  if (store == nullptr) return absl::InvalidArgumentError("CreateGlooCommunicator: null store");
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateGlooCommunicator: rank ", rank, " of a group of ", size));
  }
  if (group_name.empty()) {
    return absl::InvalidArgumentError("CreateGlooCommunicator: empty group name");
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("CreateGlooCommunicator: timeout must be positive");
  }
  if (!options.node_of_rank.empty() && static_cast<int>(options.node_of_rank.size()) != size) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateGlooCommunicator: node_of_rank has ", options.node_of_rank.size(),
                     " entries for a group of ", size));
  }
  IgnoreSigpipeOnce();
  if (size == 1) {
    return std::unique_ptr<Communicator>(
        new GlooCommunicator(0, 1, options.timeout, {}, nullptr, nullptr));
  }
  const std::string where = absl::StrCat("gloo group '", group_name, "' rank ", rank, " of ", size);

  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": cannot listen on '", options.hostname, "': ", e.what()));
  }

  std::unique_ptr<Store> prefixed = PrefixStore(group_name, store);
  GlooStoreAdapter adapter(prefixed.get(), options.timeout);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  try {
    context->setTimeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(options.timeout)));
    context->connectFullMesh(adapter, device);
  } catch (const std::exception& e) {
    if (!adapter.first_error().ok()) return Annotate(adapter.first_error(), where);
    const std::string what = e.what();
    if (LooksLikeTimeout(what)) {
      return absl::DeadlineExceededError(
          absl::StrCat(where, ": connecting to peers timed out after ",
                       absl::FormatDuration(options.timeout), ": ", what));
    }
    return absl::UnavailableError(absl::StrCat(where, ": connecting to peers: ", what));
  }
  // connectFullMesh can return on one rank while a peer is still accepting that rank's
  // connection; a rank that then closed its communicator at once (nothing to send) would fail
  // the peer's creation with "connection closed". A barrier over the new pairs ends creation
  // only once every rank has finished connecting. Its bytes are not counted in CommStats.
  AbortRegistry no_aborts;
  GlooExchanger ex(context.get(), &no_aborts, "rendezvous barrier on rank " + std::to_string(rank),
                   kRendezvousSeq, options.timeout, absl::Now() + options.timeout);
  absl::Status synced = DisseminationBarrier(ex);
  if (!synced.ok()) {
    try {
      context->closeConnections();
    } catch (const std::exception&) {
    }
    return Annotate(synced, where);
  }
  return std::unique_ptr<Communicator>(
      new GlooCommunicator(rank, size, options.timeout, options.node_of_rank, std::move(device),
                           std::move(context)));
}

}  // namespace accel::comm
