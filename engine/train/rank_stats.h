// RankStats: what one rank holds and sends during a step — memory by pool and category
// (current and peak bytes, from its MemoryLedger), bytes communicated in the step, and the time
// the trainer thread spent waiting on collectives (the exposed part of communication; the rest
// overlapped compute). GatherRankStats collects every rank's stats on every rank, so rank 0's
// metrics record can carry them all.
// Thread-compatible; GatherRankStats is a collective on the world communicator.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/base/memory_ledger.h"
#include "engine/comm/communicator.h"

namespace accel::train {

struct RankStats {
  int rank = 0;
  // Indexed [pool * kNumMemoryCategories + category].
  std::array<MemoryCounts, kNumMemoryPools * kNumMemoryCategories> memory{};
  int64_t bytes_sent = 0;      // during the step, all of this rank's communicators
  int64_t bytes_received = 0;
  // The part of bytes_sent addressed to ranks on other nodes (0 when the communicators do not
  // know the placement: comm::GlooOptions::node_of_rank); the rest stayed within the node.
  int64_t bytes_sent_cross_node = 0;
  double comm_wait_seconds = 0;
  // What the kernel says (engine/base/process_memory.h), beside the ledger: the process's peak
  // resident set (VmHWM), and inside a memory cgroup with a limit its usage and limit. -1:
  // unknown / none. Ranks run as threads of one process (tests) share these.
  int64_t peak_rss = -1;
  int64_t cgroup_usage = -1;
  int64_t cgroup_limit = -1;

  // The ledger's counts and the process's memory (ReadProcessMemory) now.
  static RankStats FromLedger(int rank, const MemoryLedger& ledger);
  // {"rank":0,"memory":{"compute":{"params":{"current":..,"peak":..},...,"total":{..}},...},
  //  "process":{"peak_rss":..[,"cgroup_usage":..,"cgroup_limit":..]},
  //  "bytes_sent":..,"bytes_sent_within_node":..,"bytes_sent_cross_node":..,
  //  "bytes_received":..,"comm_wait_seconds":..}; pools with no bytes at all
  // are left out, and the cgroup's numbers outside a memory cgroup with a limit.
  std::string ToJson() const;
};

// Every rank's stats, indexed by rank. Unavailable / DeadlineExceeded when a peer is lost.
[[nodiscard]] absl::StatusOr<std::vector<RankStats>> GatherRankStats(comm::Communicator* world,
                                                                     const RankStats& mine,
                                                                     absl::Duration timeout);

}  // namespace accel::train
