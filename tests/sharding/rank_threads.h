// Test helper: runs fn(rank, groups) on `world` ranks as threads over real gloo TCP on
// 127.0.0.1 and returns each rank's Status (index = rank). For tests that drive a Trainer
// themselves (saves, loads, a collective called on one rank only); RunGang (gang.h) covers
// whole training runs.
#pragma once

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/shard/process_groups.h"

namespace accel::testing {

// gloo_timeout is every collective's deadline: a rank left waiting fails after it.
std::vector<absl::Status> RunOnRanks(
    int world, const shard::ShardOptions& options, absl::Duration gloo_timeout,
    const std::function<absl::Status(int rank, shard::ProcessGroups groups)>& fn);

}  // namespace accel::testing
