// Communicator: the collectives the sharding engine needs, over one group of ranks (c10d's
// shape). Backends: gloo over TCP (CPU; gloo_communicator.h), NCCL (GPU; the GPU issue).
//
// Every operation is asynchronous: it is queued, executed in issue order on the communicator's
// own thread (so communication overlaps compute), and returns a Work whose Wait(timeout) gives
// its Status. All ranks must issue the same operations in the same order with the same counts.
// Buffers must stay valid and untouched until the Work completes.
//
// Reductions are sums. f32 sums in f32; bf16 and f16 are accumulated in f32 at every step and
// rounded once per hop to the wire dtype. The reduction order of each element is a fixed
// function of (size, count, element index) — the same inputs give bit-identical outputs on every
// rank and every run, and AllReduce is ReduceScatter followed by AllGather over the same chunks,
// so an all-reduce equals a reduce-scatter + all-gather done by hand with the same padding.
//
// Failure: every operation has a deadline (Options::timeout). A peer that is gone or silent
// turns the operation into Unavailable or DeadlineExceeded naming the peer rank, never a hang;
// after the first failure the communicator is broken and every later operation fails at once
// with that same error. Thread-safe: operations may be issued from any thread; they still run
// one at a time in issue order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/tensor/dtype.h"

namespace accel::comm {

enum class OpKind : int { kAllGather = 0, kReduceScatter, kAllReduce, kBroadcast, kBarrier };
inline constexpr int kNumOpKinds = 5;
std::string_view OpKindName(OpKind kind);

// Bytes this rank put on and took off the wire, by operation kind, since creation. Of the bytes
// sent, those addressed to a peer on another node (machine) are also counted apart, when the
// communicator knows where its peers run (GlooOptions::node_of_rank); otherwise 0.
struct CommStats {
  struct PerOp {
    int64_t calls = 0;
    int64_t bytes_sent = 0;
    int64_t bytes_received = 0;
    int64_t bytes_sent_cross_node = 0;  // part of bytes_sent
  };
  PerOp ops[kNumOpKinds];
  int64_t total_sent() const;
  int64_t total_received() const;
  int64_t total_sent_cross_node() const;
  std::string ToJson() const;
};

class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the operation completes or `timeout` passes (DeadlineExceeded; the operation
  // itself still ends by the communicator's own deadline).
  [[nodiscard]] virtual absl::Status Wait(absl::Duration timeout = absl::InfiniteDuration()) = 0;
  virtual bool Done() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // recv (size·count) = concatenation of every rank's send (count) in rank order. send may point
  // into recv at offset rank·count (in place).
  virtual std::shared_ptr<Work> AllGather(const void* send, void* recv, size_t count,
                                          DType dtype) = 0;
  // recv (count) = sum over ranks of send[rank·count, (rank+1)·count); send holds size·count.
  // recv may point into send at offset rank·count (in place).
  virtual std::shared_ptr<Work> ReduceScatter(const void* send, void* recv, size_t count,
                                              DType dtype) = 0;
  // buf (count) = sum over ranks, in place. count need not be divisible by size.
  virtual std::shared_ptr<Work> AllReduce(void* buf, size_t count, DType dtype) = 0;
  // buf (count) on every rank = root's buf.
  virtual std::shared_ptr<Work> Broadcast(void* buf, size_t count, DType dtype, int root) = 0;
  virtual std::shared_ptr<Work> Barrier() = 0;

  virtual CommStats stats() const = 0;
};

}  // namespace accel::comm
