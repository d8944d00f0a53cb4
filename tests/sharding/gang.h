// Test helper: trains one configuration on N ranks (threads) over real gloo TCP on 127.0.0.1
// and returns what the equivalence, memory and traffic tests compare.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/comm/communicator.h"
#include "engine/train/trainer.h"

namespace accel::testing {

struct GangResult {
  std::vector<float> params;               // rank 0's gathered final parameters
  std::vector<float> losses;               // rank 0's per-step losses (agreed across ranks)
  std::vector<train::StepMetrics> steps;   // rank 0's step records
  std::vector<int64_t> model_state_bytes;  // per rank, between steps: params + grads + optimizer
  std::vector<comm::CommStats> stats;      // per rank, world (+ shard + replicate) groups summed
  int64_t num_params = 0;
  int64_t total_padded = 0;                // plan's padded elements (for the padding allowance)
};

// Runs `options.steps` steps on `world` ranks; options.batch is per rank.
absl::StatusOr<GangResult> RunGang(const train::TrainOptions& options, int world);

}  // namespace accel::testing
