// Test helpers for the gloo communicator: a group of ranks as threads over real loopback TCP.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/comm/communicator.h"
#include "engine/comm/gloo_communicator.h"
#include "engine/comm/in_memory_store.h"
#include "engine/testing/spawn_ranks.h"

namespace accel::comm::testing {

// A group name no other test in this process uses (keys persist in a store).
inline std::string UniqueGroup(const std::string& base) {
  static std::atomic<int> counter{0};
  return absl::StrCat(base, "-", counter.fetch_add(1));
}

// Creates a communicator per rank (each on its own thread) and runs body(rank, comm) there.
// `node_of_rank`: GlooOptions::node_of_rank (empty: one node).
inline absl::Status RunGroup(int size, absl::Duration timeout,
                             const std::function<absl::Status(int, Communicator&)>& body,
                             std::vector<int> node_of_rank = {}) {
  InMemoryStore store;
  const std::string group = UniqueGroup("group");
  GlooOptions options;
  options.timeout = timeout;
  options.node_of_rank = std::move(node_of_rank);
  return accel::testing::SpawnRanks(size, [&](int rank) -> absl::Status {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        CreateGlooCommunicator(&store, group, rank, size, options);
    if (!comm.ok()) return comm.status();
    return body(rank, **comm);
  });
}

}  // namespace accel::comm::testing
