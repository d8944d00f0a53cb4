// The gloo backend (CPU, TCP): a Communicator over one gloo context whose pairs connect every
// rank to every other. The collectives are our own ring / tree algorithms on gloo's
// point-to-point API (ring_algorithms.h, docs/comm.md), run on the communicator's own thread.
//
// Creation is collective: every rank of the group calls CreateGlooCommunicator with the same
// store, group name and size, and each call returns once all `size` ranks have exchanged
// addresses through the store and connected, or fails: DeadlineExceeded naming the ranks that
// did not join within `timeout`, Unavailable if a connection fails, InvalidArgument for bad
// arguments. The group name prefixes the store keys: use a fresh one per group and attempt.
//
// The first call sets SIGPIPE to ignored if it still has its default action (gloo writes to
// sockets whose peer may be gone; the write must fail, not kill the process).
//
// Destruction never waits for a peer: it aborts the operation in progress (its Work gets
// Cancelled), fails the queued ones the same way, and joins the thread. Destroy a communicator
// only after waiting for its Works, or peers see the lost connection as Unavailable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/communicator.h"
#include "engine/comm/store.h"

namespace accel::comm {

struct GlooOptions {
  // Deadline of the rendezvous and of every operation (from when it starts executing).
  absl::Duration timeout = absl::Seconds(60);
  // The address this rank listens on; loopback for single-machine runs.
  std::string hostname = "127.0.0.1";
  // The node (machine) each rank of the group runs on, indexed by group rank: bytes sent to a
  // peer on another node are counted apart (CommStats::PerOp::bytes_sent_cross_node). Empty:
  // every rank on one node. Otherwise its size must be the group's (InvalidArgument).
  std::vector<int> node_of_rank;
};

// Does not own `store`, which is only used during the call.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(
    Store* store, const std::string& group_name, int rank, int size,
    const GlooOptions& options = {});

}  // namespace accel::comm
