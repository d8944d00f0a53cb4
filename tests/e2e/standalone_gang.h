// Test and bench helper: one gang of standalone accel-worker processes started the torchrun way
// (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT), on
// the simulated machines of a NetnsLab (ranks in blocks of ranks_per_node per node, MASTER_ADDR
// = node 0's address) or, without a lab, all on this host over loopback. Rank 0 writes the
// metrics records (--metrics-out) that the caller reads back.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/netns.h"

namespace accel::testing {

struct GangRun {
  std::string worker;              // accel-worker's path
  std::vector<std::string> flags;  // after --standalone: model, data, strategy, steps, ...
  int world = 4;
  int ranks_per_node = 2;         // with a lab; without one every rank is on this host
  const NetnsLab* lab = nullptr;  // not owned; null: loopback
  std::string dir;                // outputs: <tag><rank>.out/.err, <tag>.jsonl
  std::string tag;
  double timeout_s = 300;  // per rank, times TimeScale()
};

struct GangOutcome {
  std::vector<nlohmann::json> records;  // rank 0's metrics lines, one per step
  std::string metrics_path;
};

// Starts every rank, waits for all of them (killing the rest once one fails or times out) and
// reads the records. Internal naming the rank, its exit status and the tail of its stderr when
// a rank does not exit 0.
[[nodiscard]] absl::StatusOr<GangOutcome> RunStandaloneGang(const GangRun& run);

}  // namespace accel::testing
